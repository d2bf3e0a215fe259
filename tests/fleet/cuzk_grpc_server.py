"""A cuzk-like gRPC server for the fleet tests and benchmark: a real grpcio server built from the
project's own `.proto` (statuspanel/fleet/cuzk_grpc/proving.proto), serving `cuzk.v1.ProvingEngine`
the way a cuzk daemon does, or misbehaving on purpose:

  script         a scripted daemon: two workers on one GPU named like a real card (cuzk lists one
                 `gpus` entry per worker), queues that change every --step-secs (SCRIPT), one SRS
                 entry (HOT, size 0: what the current daemon sends), counters that advance, and
                 GetMetrics with per-kind counters
  big            a GetStatus of BIG_WORKERS worker entries (1.3 MiB: under the byte cap, over the entry cap)
  hang           GetStatus never answers (the handler waits until the server stops)
  unimplemented  a gRPC server without the ProvingEngine service: every call is UNIMPLEMENTED
  huge           GetStatus answers a 9 MiB message (a 9 MiB GPU name)
  garbage        GetStatus answers bytes that are no GetStatusResponse
  reset          not gRPC: a TCP server that resets every connection (SO_LINGER 0) once it is read

In a test: `with CuzkGrpcServer("script") as s: s.target`; `s.mode` may be switched between the gRPC
modes while it serves. As a script: `python tests/fleet/cuzk_grpc_server.py --port N --mode MODE
[--host H] [--step-secs S]`; it prints `listening on HOST:PORT` once bound and serves until killed.
"""
from __future__ import annotations

import argparse
import socket
import struct
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import grpc

from statuspanel.fleet.cuzk_grpc import proving_pb2 as pb
from statuspanel.fleet.cuzk_grpc import proving_pb2_grpc as pb_grpc

MODES = ("script", "big", "hang", "unimplemented", "huge", "garbage", "reset")
GPU_NAME = "NVIDIA GeForce RTX 4090"
VRAM_TOTAL = 25_757_220_864                  # 23.99 GiB, as the card reports it
SRS_CIRCUIT = "porep-32g"
HUGE_BYTES = 9 * 1024 * 1024
BIG_WORKERS = 20_000
# (worker jobs as (job id, kind) or None, queues as kind -> (pending, in progress), VRAM free)
SCRIPT: list[tuple[list[tuple[str, str] | None], dict[str, tuple[int, int]], int]] = [
    ([("porep-c2-1001", "porep-c2"), None], {"porep-c2": (3, 1), "snap-update": (0, 0)}, 9_000_000_000),
    ([("porep-c2-1001", "porep-c2"), ("snap-2002", "snap-update")], {"porep-c2": (2, 1), "snap-update": (1, 1)},
     2_000_000_000),
    ([None, ("snap-2002", "snap-update")], {"porep-c2": (2, 0), "snap-update": (0, 1)}, 12_000_000_000),
    ([None, None], {"porep-c2": (0, 0), "snap-update": (0, 0)}, 24_000_000_000),
]


def script_status(step: int) -> pb.GetStatusResponse:
    """The scripted daemon at `step` (cycling): what its GetStatus answers."""
    jobs, queues, free = SCRIPT[step % len(SCRIPT)]
    done = step * 2
    return pb.GetStatusResponse(
        gpus=[pb.GPUStatus(ordinal=0, name=GPU_NAME, vram_total_bytes=VRAM_TOTAL, vram_free_bytes=free,
                           current_job_id=job[0] if job else "", current_proof_kind=job[1] if job else "")
              for job in jobs],
        loaded_srs=[pb.SRSStatus(circuit_id=SRS_CIRCUIT, tier=pb.SRSStatus.HOT)],
        queues=[pb.QueueStatus(proof_kind=k, pending=p, in_progress=i) for k, (p, i) in queues.items()],
        total_proofs_completed=done, total_proofs_failed=step // 3, uptime_seconds=3600 + step)


def script_metrics(step: int) -> str:
    """GetMetrics at `step`: the daemon's families, the per-kind counters adding up to the totals."""
    done, failed = step * 2, step // 3
    return "\n".join([
        "# TYPE cuzk_proofs_completed_total counter", f"cuzk_proofs_completed_total {done}",
        "# TYPE cuzk_proofs_failed_total counter", f"cuzk_proofs_failed_total {failed}",
        "# TYPE cuzk_uptime_seconds gauge", f"cuzk_uptime_seconds {3600 + step}",
        "# TYPE cuzk_proofs_completed counter",
        f'cuzk_proofs_completed{{proof_kind="porep-c2"}} {done - step}',
        f'cuzk_proofs_completed{{proof_kind="snap-update"}} {step}',
        "# TYPE cuzk_proofs_failed counter", f'cuzk_proofs_failed{{proof_kind="porep-c2"}} {failed}',
        "# TYPE cuzk_running_jobs gauge", "cuzk_running_jobs 1", "# TYPE cuzk_gpu_workers gauge",
        "cuzk_gpu_workers 2", ""])


class _Engine(pb_grpc.ProvingEngineServicer):
    def __init__(self, server: CuzkGrpcServer) -> None:
        self.server = server

    def GetStatus(self, request: Any, context: Any) -> Any:  # noqa: N802 - the service's method name
        self.server.calls += 1
        mode = self.server.mode
        if mode == "hang":
            self.server.stopping.wait()
            context.abort(grpc.StatusCode.CANCELLED, "server stopping")
        if mode == "huge":
            return pb.GetStatusResponse(gpus=[pb.GPUStatus(ordinal=0, name="x" * HUGE_BYTES)])
        if mode == "big":
            return self.server.big()
        return script_status(self.server.step())

    def GetMetrics(self, request: Any, context: Any) -> Any:  # noqa: N802 - the service's method name
        self.server.calls += 1
        return pb.GetMetricsResponse(prometheus_text=script_metrics(self.server.step()))


def _garbage_handler() -> grpc.GenericRpcHandler:
    """GetStatus answering bytes no GetStatusResponse decodes from (field 1 says 1000 bytes follow)."""
    def status(request: bytes, context: Any) -> bytes:
        return b"\x0a\xe8\x07" + b"\x00" * 10

    handler = grpc.unary_unary_rpc_method_handler(status, request_deserializer=None, response_serializer=None)
    return grpc.method_handlers_generic_handler("cuzk.v1.ProvingEngine", {"GetStatus": handler})


class CuzkGrpcServer:
    """A grpcio server (or, in `reset` mode, a resetting TCP server) on a real socket."""

    def __init__(self, mode: str = "script", *, host: str = "127.0.0.1", port: int = 0, step_secs: float = 1.0,
                 freeze_step: int | None = None, tls: tuple[bytes, bytes] | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
        self.mode, self.host, self.port = mode, host, port
        self.step_secs, self.freeze_step = step_secs, freeze_step
        self.tls = tls  # (private key PEM, certificate PEM): serve over TLS
        self.started = time.monotonic()
        self.calls = 0
        self.stopping = threading.Event()
        self._grpc: Any = None
        self._sock: socket.socket | None = None

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}"

    def big(self) -> pb.GetStatusResponse:
        if getattr(self, "_big", None) is None:
            self._big = pb.GetStatusResponse(gpus=[
                pb.GPUStatus(ordinal=i % 8, name=GPU_NAME, vram_total_bytes=VRAM_TOTAL, vram_free_bytes=1 << 30,
                             current_job_id=f"porep-c2-{i}", current_proof_kind="porep-c2")
                for i in range(BIG_WORKERS)])
        return self._big

    def step(self) -> int:
        if self.freeze_step is not None:
            return self.freeze_step
        return int((time.monotonic() - self.started) / self.step_secs)

    def start(self) -> CuzkGrpcServer:
        if self.mode == "reset":
            return self._start_reset()
        server = grpc.server(futures.ThreadPoolExecutor(16), options=[("grpc.so_reuseport", 0)])
        if self.mode == "garbage":
            server.add_generic_rpc_handlers((_garbage_handler(),))
        elif self.mode != "unimplemented":
            pb_grpc.add_ProvingEngineServicer_to_server(_Engine(self), server)
        if self.tls is not None:
            creds = grpc.ssl_server_credentials([self.tls])
            self.port = server.add_secure_port(f"{self.host}:{self.port}", creds)
        else:
            self.port = server.add_insecure_port(f"{self.host}:{self.port}")
        server.start()
        self._grpc = server
        return self

    def _start_reset(self) -> CuzkGrpcServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(16)
        self.port = sock.getsockname()[1]
        self._sock = sock
        threading.Thread(target=self._reset_loop, name="grpc-reset", daemon=True).start()
        return self

    def _reset_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.calls += 1
            conn.settimeout(1.0)
            try:
                conn.recv(4096)  # the client's preface: then a reset, as a crashing daemon's kernel sends
            except OSError:
                pass
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    def stop(self) -> None:
        self.stopping.set()
        if self._grpc is not None:
            self._grpc.stop(grace=None).wait(5)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> CuzkGrpcServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=MODES, default="script")
    parser.add_argument("--step-secs", type=float, default=1.0)
    args = parser.parse_args()
    server = CuzkGrpcServer(args.mode, host=args.host, port=args.port, step_secs=args.step_secs).start()
    print(f"listening on {server.target}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
