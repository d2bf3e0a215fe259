"""`make gpu-wheelhouse`: everything the bare GPU machine lacks, as CPython 3.12 wheels, in one folder.

Which distributions: the third-party modules that collecting the GPU tests (and importing the
modules they reach lazily) loads here, pinned to the versions installed here, with their
dependencies as pip resolves them for 3.12; then the PyCUDA sdist (it ships no wheels) with its
build requirements and its own dependencies. `MANIFEST.json` records the target Python, which
import name comes from which distribution, and every file with its size; `gaps` and `problems`
compare a manifest with the imports of the GPU test modules (the test uses them offline).
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tarfile
import tomllib
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = ROOT / "wheelhouse"
MANIFEST = "MANIFEST.json"
TARGET_PYTHON = "3.12"
TARGET_ABI = "cp312"
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64")
LIMIT_BYTES = 48 * 1024 * 1024
PROJECT_PACKAGES = frozenset({"gpu_engine", "statuspanel", "vastmanager", "tests", "bench"})
# The GPU test modules, in the order `make gpucheck` runs them (kernels, one partition, whole proofs).
GPU_TEST_FILES = (
    "tests/backends/test_cuda_ntt.py",
    "tests/backends/test_cuda_h_odd_coset.py",
    "tests/backends/test_cuda_msm.py",
    "tests/backends/test_cuda_context.py",
    "tests/backends/test_selection.py",
    "tests/backends/test_cuda_partition_proof.py",
    "tests/backends/test_cuda_engine.py",
)
# Read too: the fixtures and helpers those modules use, and the bench gpucheck runs after them.
SUPPORT_FILES = ("tests/conftest.py", "tests/backends/conftest.py", "tests/backends/helpers.py", "bench/gpu.py")
# Imported only when a test runs (not at collection): imported here too, so their imports count.
LAZY_MODULES = ("gpu_engine.backends.cuda", "gpu_engine.backends.emulation", "gpu_engine.groth16.api",
                "gpu_engine.groth16.verifier", "gpu_engine.gpucheck.kernel_report")
PYCUDA = "pycuda"

_DUMP = """
import json, sys
import pytest
class Dump:
    def pytest_collection_finish(self, session):
        import importlib
        for name in {lazy!r}:
            importlib.import_module(name)
        names = sorted({{m.split('.')[0] for m in list(sys.modules)}})
        sys.__stdout__.write('MODULES ' + json.dumps(names) + '\\n')
sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', *{files!r}], plugins=[Dump()]))
"""


def normalize(dist: str) -> str:
    """A distribution name as wheel file names spell it (PEP 503, then '-' to '_')."""
    return re.sub(r"[-_.]+", "_", dist).lower()


def requirement_name(spec: str) -> str:
    """The normalized distribution a requirement such as 'Django>=5.2,<5.3' or 'x[extra]; marker' names."""
    return normalize(re.split(r"[<>=!~\[; ]", spec.strip(), maxsplit=1)[0])


def third_party(names: set[str] | list[str]) -> set[str]:
    """Top-level module names that are neither the standard library nor this project."""
    return {n for n in names if n and not n.startswith("_") and n not in sys.stdlib_module_names
            and n not in PROJECT_PACKAGES}


def static_imports(paths: list[Path], *, lazy: bool = True) -> set[str]:
    """Third-party top-level names the import statements of these files name: every one, or with
    lazy=False only those at module level (a conftest's fixture that the GPU tests never use,
    such as the browser's, must not pull its library into the wheelhouse)."""
    names: set[str] = set()
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        for node in (ast.walk(tree) if lazy else tree.body):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
    return third_party(names)


def gpu_test_imports(root: Path = ROOT) -> set[str]:
    """What the GPU test modules import (every statement), and what their support files import at
    module level: the names the wheelhouse must satisfy."""
    return (static_imports([root / p for p in GPU_TEST_FILES])
            | static_imports([root / p for p in SUPPORT_FILES], lazy=False))


def wheel_fits(filename: str, abi: str = TARGET_ABI) -> bool:
    """Whether a wheel installs on CPython `abi` (cp312) on x86_64 Linux (manylinux or pure)."""
    if not filename.endswith(".whl"):
        return False
    parts = filename[:-4].split("-")
    if len(parts) < 5:
        return False
    pythons, abis, platforms = (set(p.split(".")) for p in parts[-3:])
    minor = int(abi[3:])
    py_ok = bool(pythons & {abi, "py3", f"py{abi[2:]}"}) or any(
        p.startswith("cp3") and "abi3" in abis and int(p[3:]) <= minor for p in pythons)
    abi_ok = bool(abis & {abi, "abi3", "none"})
    plat_ok = "any" in platforms or any(p.startswith("manylinux") and p.endswith("x86_64") for p in platforms)
    return py_ok and abi_ok and plat_ok


def file_dist(filename: str) -> str:
    """The normalized distribution of a wheel or sdist file name."""
    if filename.endswith(".whl"):
        return normalize(filename.split("-")[0])
    return normalize(re.sub(r"-[0-9][^-]*\.(tar\.gz|zip)$", "", filename))


def gaps(imports: set[str], manifest: dict) -> set[str]:
    """Import names the wheelhouse cannot satisfy: not mapped to a distribution, or its file missing."""
    present = {file_dist(f) for f in manifest.get("files", {})}
    mapping = manifest.get("imports", {})
    return {name for name in imports if name not in mapping or normalize(mapping[name]) not in present}


def problems(manifest: dict, folder: Path | None = None) -> list[str]:
    """Everything wrong with a manifest (and, given the folder, with the files it lists)."""
    out = []
    if manifest.get("python") != TARGET_PYTHON:
        out.append(f"made for Python {manifest.get('python')}, the GPU machine runs {TARGET_PYTHON}")
    files: dict[str, int] = manifest.get("files", {})
    wheels = [f for f in files if f.endswith(".whl")]
    out += [f"{f} does not install on {TARGET_ABI} x86_64 Linux" for f in wheels if not wheel_fits(f)]
    sdists = [f for f in files if not f.endswith(".whl")]
    if [file_dist(f) for f in sdists] != [PYCUDA]:
        out.append(f"expected exactly the {PYCUDA} sdist besides the wheels, found {sdists}")
    needed = {requirement_name(r) for r in manifest.get("requirements", []) + manifest.get("build_requirements", [])}
    missing = needed - {file_dist(f) for f in files}
    if missing:
        out.append(f"requirements without a file: {sorted(missing)}")
    total = sum(files.values())
    if total > LIMIT_BYTES:
        out.append(f"{total / 2**20:.1f} MiB is over the {LIMIT_BYTES // 2**20} MiB limit")
    if folder is not None:
        for name, size in files.items():
            path = folder / name
            if not path.is_file() or path.stat().st_size != size:
                out.append(f"{name} is missing or has another size than the manifest says")
    return out


def load_manifest(folder: Path) -> dict:
    return json.loads((folder / MANIFEST).read_text())


# -- making it (needs the registries) --

def collected_modules(python: str = sys.executable) -> list[str]:
    """Top-level modules loaded by collecting the GPU test modules (and importing the lazy ones)."""
    code = _DUMP.format(lazy=LAZY_MODULES, files=list(GPU_TEST_FILES))
    proc = subprocess.run([python, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    for line in proc.stdout.splitlines():
        if line.startswith("MODULES "):
            return json.loads(line[len("MODULES "):])
    raise SystemExit(f"collecting the GPU tests failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def import_map(names: set[str]) -> dict[str, str]:
    """Import name -> installed distribution (PyCUDA maps to its sdist)."""
    from importlib import metadata

    dists = metadata.packages_distributions()
    out = {name: dists[name][0] for name in sorted(names) if name in dists}
    out[PYCUDA] = PYCUDA
    return out


def declared_specs() -> dict[str, str]:
    """Normalized name -> requirement as pyproject.toml declares it (runtime and every extra). The
    wheelhouse asks for these ranges, not the versions installed here: the newest of those may have
    wheels only for newer manylinux tags than the GPU machine's (numpy >= 2.3 has no manylinux2014
    wheel), and the ranges are what the project promises to work with."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {requirement_name(spec): spec for spec in specs}


def _pip_download(args: list[str], dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--dest", str(dest), *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def _binary(requirements: list[str], dest: Path) -> None:
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    _pip_download(["--python-version", TARGET_PYTHON, "--implementation", "cp", "--abi", TARGET_ABI,
                   "--only-binary=:all:", *platforms, *requirements], dest)


def _sdist_requirements(sdist: Path) -> tuple[list[str], list[str]]:
    """(build requirements, runtime requirements) read from the sdist's pyproject.toml and PKG-INFO."""
    build, runtime = ["setuptools", "wheel"], []
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if len(parts) != 2:
                continue
            data = tar.extractfile(member)
            if parts[1] == "pyproject.toml" and data:
                build = tomllib.loads(data.read().decode()).get("build-system", {}).get("requires", build)
            elif parts[1] == "PKG-INFO" and data:
                info = Parser().parsestr(data.read().decode())
                runtime = [r for r in info.get_all("Requires-Dist") or [] if "extra ==" not in r]
    return list(build), runtime


def make(folder: Path, pycuda_spec: str) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.is_file():
            old.unlink()
    names = third_party(collected_modules()) | gpu_test_imports()
    names.discard(PYCUDA)
    mapping = import_map(names)
    unmapped = sorted(names - set(mapping))
    if unmapped:
        raise SystemExit(f"imports with no installed distribution: {unmapped}")
    declared = declared_specs()
    requirements = sorted({declared.get(normalize(d), d) for d in set(mapping.values()) - {PYCUDA}}, key=str.lower)
    _binary(requirements, folder)
    # Without build isolation pip reads the sdist's metadata with what is installed here, instead of
    # building its build requirements (numpy) from source as --no-binary :all: would.
    _pip_download(["--no-binary", ":all:", "--no-deps", "--no-build-isolation", pycuda_spec], folder)
    sdist = next(folder.glob(f"{PYCUDA}-*.tar.gz"))
    build, runtime = _sdist_requirements(sdist)
    _binary(build + runtime + ["pip"], folder)  # pip: for a Python without ensurepip (see check.py)
    files = {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.name != MANIFEST}
    manifest = {
        "python": TARGET_PYTHON, "abi": TARGET_ABI, "platforms": list(PLATFORMS),
        "imports": mapping, "requirements": requirements + runtime, "build_requirements": [*build, "pip"],
        "pycuda": sdist.name,
        "files": files,
        "total_bytes": sum(files.values()),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="gpucheck wheelhouse", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--pycuda", default="pycuda>=2025.1", help="the PyCUDA requirement to fetch as source")
    args = ap.parse_args(argv)
    manifest = make(args.dir, args.pycuda)
    issues = problems(manifest, args.dir) + [f"GPU test import {n!r} has no file"
                                              for n in sorted(gaps(gpu_test_imports(), manifest))]
    print(f"{len(manifest['files'])} files, {manifest['total_bytes'] / 2**20:.1f} MiB in {args.dir}")
    for issue in issues:
        print(f"wheelhouse problem: {issue}", file=sys.stderr)
    return 1 if issues else 0
