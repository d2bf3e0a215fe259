"""`make gpucheck`: on a machine with an NVIDIA GPU, install from the wheelhouse, build PyCUDA, report
the kernels' resources, run the GPU tests in order and the GPU bench, and write one Markdown report.

Everything is offline and bounded: each step gets what is left of --budget-secs (10 minutes by
default) and the report is written whatever happens, its path printed last. Without a GPU the
command says so and exits 0; with one, a missing wheelhouse or one made for another Python is
refused before anything is installed.
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpu_engine.gpucheck import wheelhouse

ROOT = wheelhouse.ROOT
DEFAULT_REPORT = ROOT / "test-artifacts" / "gpucheck" / "report.md"
DEFAULT_VENV = ROOT / ".cache" / "gpucheck-venv"
TAIL = 6000
# (title, pytest arguments): kernels first, then one partition, then whole proofs, then the engine.
TEST_STEPS = (
    ("GPU kernels: NTT, odd-coset H, MSM", list(wheelhouse.GPU_TEST_FILES[:3])),
    ("contexts, faults, backend choice", ["tests/backends/test_cuda_context.py", "tests/backends/test_selection.py"]),
    ("one partition: H on the GPU equals the CPU's", ["tests/backends/test_cuda_partition_proof.py", "-k", "same_h"]),
    ("whole partition proofs verified by the CPU verifier",
     ["tests/backends/test_cuda_partition_proof.py", "-k", "verifies"]),
    ("the engine: a mixed batch on two workers sharing the device", ["tests/backends/test_cuda_engine.py"]),
)
BENCH_ARGS = ["--ntt", "16", "22", "--msm", "12", "20", "--cpu-max-log", "14", "--repeat", "3", "--hot-log", "18"]


def detect_gpu() -> tuple[bool, str]:
    """(True, device names) when the driver library initialises and counts a device, else (False, why)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return False, f"no NVIDIA driver (libcuda.so.1 does not load: {exc})"
    if cuda.cuInit(0) != 0:
        return False, "the NVIDIA driver is installed but cuInit failed (no usable device)"
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return False, "the NVIDIA driver reports no GPU"
    names = []
    for ordinal in range(count.value):
        dev, name = ctypes.c_int(0), ctypes.create_string_buffer(256)
        cuda.cuDeviceGet(ctypes.byref(dev), ordinal)
        cuda.cuDeviceGetName(name, 256, dev)
        names.append(name.value.decode(errors="replace"))
    return True, ", ".join(names)


def wheelhouse_refusal(folder: Path, python: str) -> str | None:
    """Why the wheelhouse cannot serve this machine's Python `python` ("3.12"), or None."""
    manifest_path = folder / wheelhouse.MANIFEST
    if not manifest_path.is_file():
        return (f"no wheelhouse at {folder}: run `make gpu-wheelhouse` on a machine with the package registries "
                "and bring the folder along")
    manifest = wheelhouse.load_manifest(folder)
    if manifest.get("python") != python:
        return (f"the wheelhouse at {folder} was made for Python {manifest.get('python')}, this machine runs "
                f"Python {python}: run `make gpu-wheelhouse` for {python} (or run gpucheck with that Python)")
    issues = wheelhouse.problems(manifest, folder)
    return f"the wheelhouse at {folder} is unusable: {'; '.join(issues)}" if issues else None


@dataclass
class Step:
    title: str
    ok: bool
    seconds: float
    output: str = ""                    # the tail of stdout and stderr together
    note: str = ""
    stdout: str = ""                    # stdout alone, whole: a table a step prints for the report
    required: bool = True


@dataclass
class Run:
    deadline: float
    steps: list[Step] = field(default_factory=list)

    def run(self, title: str, cmd: list[str], *, env: dict | None = None, cap: float | None = None,
            required: bool = True) -> Step:
        left = self.deadline - time.monotonic()
        if left < 5:
            step = Step(title, False, 0.0, note="skipped: the time budget is spent")
        else:
            start = time.monotonic()
            print(f"gpucheck: {title} ...", flush=True)
            try:
                proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True,
                                      text=True, timeout=min(left, cap or left))
                out, ok, note = proc.stdout + proc.stderr, proc.returncode == 0, f"exit {proc.returncode}"
                stdout = proc.stdout
            except subprocess.TimeoutExpired as exc:
                partial = exc.stdout or ""
                out = partial.decode(errors="replace") if isinstance(partial, bytes) else partial
                ok, note, stdout = False, f"timed out after {time.monotonic() - start:.0f} s", ""
            step = Step(title, ok, time.monotonic() - start, out[-TAIL:], note, stdout=stdout)
        step.required = required
        print(f"gpucheck: {title}: {'ok' if step.ok else 'FAILED'} ({step.note}, {step.seconds:.0f} s)", flush=True)
        self.steps.append(step)
        return step

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(s.ok or not s.required for s in self.steps)


def cuda_root() -> Path | None:
    """The toolkit directory holding include/cuda.h: CUDA_HOME, CUDA_PATH, nvcc's real location (nvcc on
    PATH may be a wrapper script elsewhere), or /usr/local/cuda."""
    nvcc = shutil.which("nvcc")
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parents[1]))
        text = Path(nvcc).read_bytes()[:4096]
        if text.startswith(b"#!"):  # a wrapper: the toolkit's nvcc it execs
            candidates += [m.decode() for m in re.findall(rb"(/[\w./-]+)/bin/nvcc", text)]
    candidates.append("/usr/local/cuda")
    for candidate in candidates:
        if candidate and (Path(candidate) / "include" / "cuda.h").is_file():
            return Path(candidate)
    return None


def _linkable_libcuda(work: Path) -> str | None:
    """A directory where `-lcuda` resolves: the driver often ships only libcuda.so.1, and the toolkit's
    stubs may be missing; then a libcuda.so link to the driver's library is made under `work`."""
    found = ctypes.util.find_library("cuda")
    if found is None:
        return None
    try:
        path = Path(ctypes.CDLL(found)._name)  # noqa: SLF001 - ctypes' documented name of the loaded library
        if not path.is_absolute():
            lines = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines()
            path = next(Path(line.split("=>")[-1].strip()) for line in lines if found in line)
    except (OSError, StopIteration):
        return None
    link_dir = work / "libcuda"
    link_dir.mkdir(parents=True, exist_ok=True)
    link = link_dir / "libcuda.so"
    link.unlink(missing_ok=True)
    link.symlink_to(path)
    return str(link_dir)


def _pycuda_env(work: Path) -> dict[str, str]:
    """PyCUDA's build reads its options from ~/.aksetup-defaults.py: HOME points at one written here with
    the toolkit's root, the directory where -lcuda resolves, and cuRAND only when the toolkit has it.
    build_ext runs in parallel (PyCUDA's C++ takes minutes serially)."""
    cfg = work / "build-parallel.cfg"
    cfg.write_text(f"[build_ext]\nparallel = {os.cpu_count() or 4}\n")
    home = work / "pycuda-home"
    home.mkdir(parents=True, exist_ok=True)
    env = {"DIST_EXTRA_CONFIG": str(cfg), "HOME": str(home)}
    options = []
    root = cuda_root()
    if root is not None:
        env["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        options += [f"CUDA_ROOT = {str(root)!r}", f"CUDA_INC_DIR = [{str(root / 'include')!r}]",
                    f"CUDA_ENABLE_CURAND = {(root / 'include' / 'curand.h').is_file()}"]
    libdir = _linkable_libcuda(work)
    if libdir is not None:
        env["LIBRARY_PATH"] = os.pathsep.join(p for p in (libdir, os.environ.get("LIBRARY_PATH")) if p)
        options.append(f"CUDADRV_LIB_DIR = [{libdir!r}]")
    (home / ".aksetup-defaults.py").write_text("\n".join(options) + "\n")
    return env


def _make_venv(run: Run, venv: Path, folder: Path) -> bool:
    """A virtual environment with pip; where the Python has no ensurepip (Debian without python3-venv)
    it is made bare and pip is installed from the wheelhouse's own pip wheel."""
    if run.run("virtual environment", [sys.executable, "-m", "venv", "--clear", str(venv)], required=False).ok:
        return True
    pip_wheel = next(folder.glob("pip-*.whl"), None)
    if pip_wheel is None:
        return run.run("pip wheel in the wheelhouse", ["false"]).ok
    if not run.run("virtual environment without pip", [sys.executable, "-m", "venv", "--clear", "--without-pip",
                                                        str(venv)]).ok:
        return False
    return run.run("pip from the wheelhouse", [str(venv / "bin" / "python"), f"{pip_wheel}/pip", "install", "-q",
                                               "--no-index", str(pip_wheel)]).ok


def run_checks(args: argparse.Namespace, gpus: str) -> tuple[Run, str]:
    run = Run(time.monotonic() + args.budget_secs)
    manifest = wheelhouse.load_manifest(args.wheelhouse)
    venv, work = args.venv, args.report.parent
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(args.wheelhouse)]
    kernels = ""
    if not _make_venv(run, venv, args.wheelhouse):
        return run, kernels
    if not run.run("dependencies from the wheelhouse", pip + manifest["requirements"]).ok:
        return run, kernels
    pycuda = run.run("PyCUDA built from its sdist", pip + [str(args.wheelhouse / manifest["pycuda"])],
                     env=_pycuda_env(work), cap=300)
    if not pycuda.ok:
        return run, kernels
    report = run.run("kernel resources (PyCUDA)", [str(py), "-m", "gpu_engine.gpucheck", "kernels"], cap=180)
    kernels = report.stdout if report.ok else ""  # the table, not the compiler's words on stderr
    for title, targets in TEST_STEPS:
        run.run(title, [str(py), "-m", "pytest", "-m", "gpu", "-q", "-rfEs", "-p", "no:cacheprovider", *targets],
                cap=240)
    run.run("bench/gpu.py", [str(py), "bench/gpu.py", *BENCH_ARGS, "--out", str(work / "bench.md")], cap=240)
    return run, kernels


def write_report(path: Path, run: Run, gpus: str, kernels: str) -> None:
    ok = run.passed
    lines = [f"# gpucheck: {'PASS' if ok else 'FAIL'}", "",
             f"- GPU: {gpus}", f"- host: {platform.node()}, Python {platform.python_version()}",
             f"- finished: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}", "",
             "| step | verdict | seconds | note |", "|---|---|---|---|"]
    lines += [f"| {s.title} | {'ok' if s.ok else 'FAILED' if s.required else 'failed (not needed)'} "
              f"| {s.seconds:.0f} | {s.note} |" for s in run.steps]
    if kernels:
        lines += ["", "## Kernel resources", "", kernels.strip()]
    bench = path.parent / "bench.md"
    if bench.is_file():
        lines += ["", "## Bench", "", bench.read_text().replace("# GPU bench", "### GPU bench").strip()]
    for s in run.steps:
        if s.output and (not s.ok or s.title.startswith(("GPU kernels", "one partition", "whole"))):
            lines += ["", f"## {s.title}: output (tail)", "", "```", s.output.strip(), "```"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str], detect=detect_gpu) -> int:
    ap = argparse.ArgumentParser(prog="gpucheck", description=__doc__.splitlines()[0])
    ap.add_argument("--wheelhouse", type=Path, default=wheelhouse.DEFAULT_DIR)
    ap.add_argument("--report", type=Path, default=DEFAULT_REPORT)
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--budget-secs", type=float, default=600.0)
    args = ap.parse_args(argv)
    found, gpus = detect()
    if not found:
        print(f"gpucheck: no GPU on this machine ({gpus}); nothing to check. "
              "Run `make gpucheck` on a machine with an NVIDIA GPU (see docs/GPU.md).")
        return 0
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    refusal = wheelhouse_refusal(args.wheelhouse, python)
    if refusal:
        print(f"gpucheck: refusing: {refusal}", file=sys.stderr)
        return 2
    args.report = args.report.resolve()
    args.report.parent.mkdir(parents=True, exist_ok=True)
    run, kernels = run_checks(args, gpus)
    write_report(args.report, run, gpus, kernels)
    passed = run.passed
    print(f"gpucheck: {'PASS' if passed else 'FAIL'}; report: {args.report}")
    return 0 if passed else 1
