"""GPU telemetry for the snapshot's `gpus` list, read through NVML (nvidia-ml-py).

NVML is imported lazily and is optional (the `[gpu]` extra): without the package, the
library or a GPU, `poll()` returns an empty list and the panel shows no GPU cards. A
reading that one device refuses (power on some boards) is None, not an error.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class GpuTelemetry:
    """One NVML session; `poll()` returns one dict per GPU with the snapshot's keys."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._lock = threading.Lock()
        self._init()

    def _init(self) -> None:
        try:
            import pynvml
        except ImportError:
            return
        try:
            pynvml.nvmlInit()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception as exc:  # noqa: BLE001 - NVMLError_* for no library, driver or device
            log.debug("NVML unavailable: %s", exc)
            self._handles = []
            return
        self._nvml = pynvml

    @property
    def available(self) -> bool:
        return self._nvml is not None and bool(self._handles)

    def _read(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception:  # noqa: BLE001 - NVMLError_NotSupported and friends: unknown value
            return None

    def poll(self) -> list[dict[str, Any]]:
        """[{ordinal, name, util_pct, mem_used_bytes, mem_total_bytes, temp_c, power_w}]."""
        with self._lock:
            nv = self._nvml
            if nv is None:
                return []
            out = []
            for ordinal, h in enumerate(self._handles):
                name = self._read(lambda: nv.nvmlDeviceGetName(h))
                if isinstance(name, bytes):
                    name = name.decode(errors="replace")
                util = self._read(lambda: nv.nvmlDeviceGetUtilizationRates(h))
                mem = self._read(lambda: nv.nvmlDeviceGetMemoryInfo(h))
                power_mw = self._read(lambda: nv.nvmlDeviceGetPowerUsage(h))
                out.append({
                    "ordinal": ordinal,
                    "name": name,
                    "util_pct": None if util is None else int(util.gpu),
                    "mem_used_bytes": None if mem is None else int(mem.used),
                    "mem_total_bytes": None if mem is None else int(mem.total),
                    "temp_c": self._read(lambda: int(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))),
                    "power_w": None if power_mw is None else round(power_mw / 1000.0, 1),
                })
            return out

    def close(self) -> None:
        with self._lock:
            if self._nvml is not None:
                try:
                    self._nvml.nvmlShutdown()
                except Exception:  # noqa: BLE001 - shutting down twice or after a driver loss
                    pass
                self._nvml = None
                self._handles = []


class TelemetryPoller:
    """Calls `publish(gpus)` (e.g. `tracker.set_gpus`) about once per `interval` seconds.

    Does nothing when NVML is unavailable, so an engine may always start one."""

    def __init__(self, publish: Callable[[list[dict[str, Any]]], None], *, interval: float = 1.0,
                 telemetry: GpuTelemetry | None = None) -> None:
        self.publish = publish
        self.interval = interval
        self.telemetry = telemetry or GpuTelemetry()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.telemetry.available or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="gpu-telemetry", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.publish(self.telemetry.poll())
            except Exception:  # telemetry must never take the engine down
                log.exception("GPU telemetry update failed")
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.telemetry.close()
