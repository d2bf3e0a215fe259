"""The parameter cache: one file per circuit shape, generated once, checked on every load.

The file is named by the shape hash. A corrupt, truncated or stale file is logged and
regenerated, never used. Generation holds an exclusive `flock` on a side lock file so
that engines sharing a directory generate a shape once; the file itself is written to a
temporary name, fsynced and renamed, so a reader never sees half of one. Loaded params
are also kept in memory per (directory, kind, scale).
"""
from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import threading
from pathlib import Path

from gpu_engine.groth16 import circuits
from gpu_engine.groth16.keys import FORMAT_VERSION, Params, ParamsFileError, dump_params, load_params_bytes
from gpu_engine.groth16.r1cs import R1CSMatrices
from gpu_engine.groth16.setup import Progress, generate_params

log = logging.getLogger(__name__)

_memory: dict[tuple[str, str, int], Params] = {}
_locks: dict[tuple[str, str, int], threading.Lock] = {}
_locks_guard = threading.Lock()


def circuit_shape(kind: str, scale: int = 1) -> tuple[R1CSMatrices, str]:
    """The matrices of `kind` at `scale` and their hash (the cache key)."""
    cs = circuits.build(kind, circuits.SHAPE_JOB_ID, 0, scale, record=True)
    matrices = cs.matrices()
    return matrices, matrices.digest(f"groth16-v{FORMAT_VERSION}|{kind}|{scale}")


def params_path(params_dir: Path | str, kind: str, shape_hash: str) -> Path:
    return Path(params_dir) / f"{kind}-{shape_hash}.params"


def _read(path: Path, shape_hash: str) -> Params | None:
    """The params in `path`, or None (with a warning) when it must not be used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return load_params_bytes(raw, shape_hash)
    except ParamsFileError as exc:
        log.warning("parameter file %s rejected (%s); regenerating", path, exc)
        return None


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_params(kind: str, params_dir: Path | str, scale: int = 1, progress: Progress | None = None) -> Params:
    """Params for `kind` at `scale`: from memory, else from disk, else generated and stored."""
    key = (str(Path(params_dir).resolve()), kind, scale)
    with _locks_guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        cached = _memory.get(key)
        if cached is not None:
            return cached
        matrices, shape_hash = circuit_shape(kind, scale)
        directory = Path(params_dir)
        directory.mkdir(parents=True, exist_ok=True)
        path = params_path(directory, kind, shape_hash)
        params = _read(path, shape_hash)
        if params is None:
            with open(path.with_name(path.name + ".lock"), "a") as lockf:
                fcntl.flock(lockf, fcntl.LOCK_EX)
                try:
                    params = _read(path, shape_hash)  # another engine may have made it meanwhile
                    if params is None:
                        log.info("generating Groth16 parameters for %s (scale %d, %d constraints)",
                                 kind, scale, matrices.num_constraints)
                        data = dump_params(generate_params(kind, scale, matrices, shape_hash, progress))
                        _write_atomic(path, data)
                        # Read back what was written: affine points (faster MSMs than the
                        # setup's projective sums), and the file proven loadable.
                        params = load_params_bytes(data, shape_hash)
                finally:
                    fcntl.flock(lockf, fcntl.LOCK_UN)
        _memory[key] = params
        return params


def forget_loaded(params_dir: Path | str | None = None) -> None:
    """Drop the in-memory copies (of one directory, or all): the next load reads the files."""
    prefix = None if params_dir is None else str(Path(params_dir).resolve())
    with _locks_guard:
        for key in [k for k in _memory if prefix is None or k[0] == prefix]:
            del _memory[key]
