"""The parameter cache: one file per circuit shape, checked on every load. A trusted setup.

The file is named by the shape hash. Its verifying key is the one every proof of the kind is
checked against, so it is never replaced behind anyone's back: a corrupt, truncated or stale file
is an error naming the file and the command that regenerates it (`ParamsUnavailable`), and so is
a missing one unless the caller asks to create it (`create=True`: `genparams`, an engine's first
start; pool children and verifiers never do). `regenerate_params` makes a new setup on purpose
(`genparams --force`).

Generation holds an exclusive `flock` on a side lock file so that engines sharing a directory
generate a shape once; the file itself is written to a temporary name, fsynced and renamed, so a
reader never sees half of one. Loaded params are also kept in memory per (directory, kind, scale).
"""
from __future__ import annotations

import fcntl
import logging
import threading
from pathlib import Path

from gpu_engine.groth16 import circuits
from gpu_engine.groth16.keyfile import write_atomic
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


class ParamsUnavailable(ParamsFileError):
    """The parameters of a kind cannot be used: the message names the file and how to regenerate it."""


class ParamsMissing(ParamsUnavailable):
    """No parameter file at all (as opposed to an unusable one)."""


def regenerate_command(kind: str, scale: int, params_dir: Path | str) -> str:
    return f"manage.py genparams --force --kind {kind} --scale {scale} --params-dir {params_dir}"


def unavailable_message(kind: str, scale: int, params_dir: Path | str, path: Path, why: str) -> str:
    return (f"parameters of {kind} (scale {scale}): {path}: {why}. They are the trusted setup every {kind} "
            f"proof is verified against, so they are not silently made again: restore the file, or make a new "
            f"setup with `{regenerate_command(kind, scale, params_dir)}` (proofs issued under the old key will "
            f"no longer verify against the new one)")


def _read(path: Path, shape_hash: str, kind: str, scale: int, params_dir: Path) -> Params | None:
    """The params in `path`, None when there is no file, ParamsUnavailable when it must not be used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ParamsUnavailable(unavailable_message(kind, scale, params_dir, path, f"cannot read: {exc}")) from None
    try:
        return load_params_bytes(raw, shape_hash)
    except ParamsFileError as exc:
        raise ParamsUnavailable(unavailable_message(kind, scale, params_dir, path, f"unusable ({exc})")) from None


def _key(kind: str, params_dir: Path | str, scale: int) -> tuple[str, str, int]:
    return (str(Path(params_dir).resolve()), kind, scale)


def _lock_for(key: tuple[str, str, int]) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def load_params(kind: str, params_dir: Path | str, scale: int = 1, progress: Progress | None = None, *,
                create: bool = False) -> Params:
    """Params for `kind` at `scale`: from memory, else from disk; generated and stored only when no
    file exists and `create` is set. An unusable file is always ParamsUnavailable (never replaced)."""
    key = _key(kind, params_dir, scale)
    with _lock_for(key):
        cached = _memory.get(key)
        if cached is not None:
            return cached
        matrices, shape_hash = circuit_shape(kind, scale)
        directory = Path(params_dir)
        path = params_path(directory, kind, shape_hash)
        params = _read(path, shape_hash, kind, scale, directory)
        if params is None:
            if not create:
                raise ParamsMissing(unavailable_message(kind, scale, directory, path, "missing"))
            params = _generate(kind, scale, matrices, shape_hash, directory, path, progress, replace=False)
        _memory[key] = params
        return params


def regenerate_params(kind: str, params_dir: Path | str, scale: int = 1, progress: Progress | None = None) -> Params:
    """A new setup for `kind`, replacing whatever file is there (`genparams --force`): a new key."""
    key = _key(kind, params_dir, scale)
    with _lock_for(key):
        matrices, shape_hash = circuit_shape(kind, scale)
        directory = Path(params_dir)
        path = params_path(directory, kind, shape_hash)
        params = _generate(kind, scale, matrices, shape_hash, directory, path, progress, replace=True)
        _memory[key] = params
        return params


def _generate(kind: str, scale: int, matrices: R1CSMatrices, shape_hash: str, directory: Path, path: Path,
              progress: Progress | None, *, replace: bool) -> Params:
    directory.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        try:
            if not replace:
                params = _read(path, shape_hash, kind, scale, directory)  # another engine may have made it
                if params is not None:
                    return params
            log.info("generating Groth16 parameters for %s (scale %d, %d constraints)",
                     kind, scale, matrices.num_constraints)
            data = dump_params(generate_params(kind, scale, matrices, shape_hash, progress))
            write_atomic(path, data)
            # Read back what was written: affine points (faster MSMs than the setup's projective
            # sums), and the file proven loadable.
            return load_params_bytes(data, shape_hash)
        finally:
            fcntl.flock(lockf, fcntl.LOCK_UN)


def forget_loaded(params_dir: Path | str | None = None) -> None:
    """Drop the in-memory copies (of one directory, or all): the next load reads the files."""
    prefix = None if params_dir is None else str(Path(params_dir).resolve())
    with _locks_guard:
        for key in [k for k in _memory if prefix is None or k[0] == prefix]:
            del _memory[key]
