"""Every kernel file compiles with nvcc for the GPUs we target (sm_80, sm_90).

Runs without a GPU. A machine without nvcc fails here with that message: CI must have
the toolkit, and a silent skip would hide a broken kernel."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpu_engine.backends.cuda import KERNEL_DIR, MODULES, kernel_source

ARCHS = ("sm_80", "sm_90")
CU_FILES = sorted(p.name for p in KERNEL_DIR.glob("*.cu"))


def _nvcc() -> str:
    default = Path("/usr/local/cuda/bin/nvcc")
    found = shutil.which("nvcc") or (str(default) if default.exists() else None)
    if found is None:
        pytest.fail("nvcc not found: install the CUDA toolkit (and put nvcc on PATH) to build the kernels")
    return found


def _cubin(source: Path, arch: str, out_dir: Path) -> str:
    """Compile `source` to a cubin; what nvcc said on stderr."""
    out = out_dir / f"{source.stem}-{arch}.cubin"
    proc = subprocess.run(
        [_nvcc(), "-cubin", f"-arch={arch}", "-I", str(KERNEL_DIR), "-o", str(out), str(source)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, f"nvcc failed on {source.name} for {arch}:\n{proc.stderr[-3000:]}"
    assert out.stat().st_size > 0
    return proc.stderr


def test_kernel_files_are_present():
    assert set(MODULES) <= set(CU_FILES)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", CU_FILES)
def test_kernel_file_compiles(name, arch, tmp_path):
    _cubin(KERNEL_DIR / name, arch, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODULES)
def test_flattened_module_source_compiles(name, tmp_path):
    """The text PyCUDA compiles: local headers inlined, nothing left to include, and nothing for nvcc
    to warn about (PyCUDA turns each compiler word into a UserWarning in the engine's log: on the
    first GPU run, "#pragma once in main file" and unused host constants at every start)."""
    text = kernel_source(name)
    assert '#include "' not in text
    assert text.count("struct fp_t {") <= 1 and text.count("struct fr_t {") <= 1
    src = tmp_path / f"flat-{name}"
    src.write_text(text)
    said = _cubin(src, "sm_90", tmp_path)
    assert "warning" not in said.lower(), said[-3000:]
