"""The real circom and snarkjs, driven from Python for the circuit tests and the circom benchmark.

The tools are the pinned npm packages of the repository's package.json (installed by `make
nodetools`, or here by `ensure_node_tools` when node_modules is missing or older than the lock).
Compiling, the powers of tau and the Groth16 setup are slow (a 2^10 powers of tau is about a
minute here), so their results are cached under a directory keyed by a digest of the circuit's
source (with everything it includes), the lock file and the node version, built in a temporary
folder and renamed into place under a file lock: concurrent test runs build once, reruns are
instant, and a half-built entry is never seen.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO / "node_modules"
LOCK_FILE = REPO / "package-lock.json"
CIRCUITS_DIR = Path(__file__).resolve().parent / "circuits"
# Resolved: circom2 runs under WASI, which refuses to follow a symlinked .cache (absolute target).
FIXTURE_CACHE = (REPO / ".cache").resolve() / "circom-fixtures"
TOOLS = ("snarkjs", "circom2")
_INCLUDE = re.compile(r'^\s*include\s+"([^"]+)"\s*;', re.M)
# Setup entropy is fixed so that a rebuilt cache entry is the same ceremony; these keys are for tests.
ENTROPY = "vastmanager test ceremony"


class ToolError(RuntimeError):
    """A tool run failed; the message carries the command and the tail of its output."""


def unavailable_reason() -> str | None:
    """Why the tools cannot run here (for a skip), or None when node and npm are present."""
    for exe in ("node", "npm"):
        if shutil.which(exe) is None:
            return f"{exe} is not installed: the circom tests need Node.js and npm (apt-get install nodejs npm)"
    return None


def _tools_stale() -> bool:
    if not all((NODE_MODULES / ".bin" / tool).exists() for tool in TOOLS):
        return True
    return LOCK_FILE.stat().st_mtime > (NODE_MODULES / ".package-lock.json").stat().st_mtime


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock held for the block (blocks until free)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_node_tools() -> None:
    """`npm ci` from the lock file when node_modules is missing or older than the lock."""
    if not _tools_stale():
        return
    with file_lock(REPO / ".cache" / "npm-ci.lock"):
        if _tools_stale():
            run(["npm", "ci", "--no-audit", "--no-fund"], cwd=REPO, timeout=600)


def tool_bin(name: str) -> Path:
    return NODE_MODULES / ".bin" / name


@lru_cache(maxsize=1)
def tool_versions() -> str:
    """What the cache key says about the tools: the lock file's digest and node's version."""
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return f"{hashlib.sha256(LOCK_FILE.read_bytes()).hexdigest()[:16]}-node{node}"


def run(cmd: Sequence[str | os.PathLike], *, cwd: Path | None = None, timeout: float = 600) -> str:
    """Run a command; its stdout, or ToolError with the command and the end of its output."""
    args = [str(c) for c in cmd]
    try:
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{' '.join(args)} ran past {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = (proc.stdout[-2000:] + "\n" + proc.stderr[-2000:]).strip()
        raise ToolError(f"{' '.join(args)} exited {proc.returncode}:\n{tail}")
    return proc.stdout


def snarkjs(*args: str | os.PathLike, timeout: float = 600) -> str:
    return run([tool_bin("snarkjs"), *args], timeout=timeout)


# Where `include` looks besides the including file's folder: circomlib, and the test circuits'
# own templates (so a main file written elsewhere, as the benchmark's, can include "lib/...").
INCLUDE_DIRS = (NODE_MODULES, CIRCUITS_DIR)


def source_files(source: Path, include_dirs: Sequence[Path] = INCLUDE_DIRS) -> list[Path]:
    """The circuit file and every file it includes, transitively, in a stable order."""
    seen: list[Path] = []

    def visit(path: Path) -> None:
        path = path.resolve()
        if path in seen:
            return
        seen.append(path)
        for name in _INCLUDE.findall(path.read_text()):
            for base in (path.parent, *include_dirs):
                candidate = base / name
                if candidate.exists():
                    visit(candidate)
                    break
            else:
                raise ToolError(f"{path.name} includes {name!r}, found neither beside it nor in {include_dirs}")

    visit(source)
    return seen


def source_digest(source: Path) -> str:
    h = hashlib.sha256(tool_versions().encode())
    for path in source_files(source):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:20]


@contextlib.contextmanager
def _building(final: Path) -> Iterator[Path]:
    """A scratch directory renamed to `final` when the block succeeds (removed when it fails)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        yield scratch
        os.replace(scratch, final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def powers_of_tau(power: int, cache_root: Path = FIXTURE_CACHE) -> Path:
    """A prepared (phase 2) BLS12-381 powers of tau for circuits of up to 2^power rows.

    A cached ceremony of a larger power serves too (snarkjs reads the part it needs)."""
    ensure_node_tools()
    root = cache_root / "ptau"
    for p in range(power, 29):
        found = root / f"{tool_versions()}-{p}" / "final.ptau"
        if found.exists():
            return found
    final = root / f"{tool_versions()}-{power}"
    with file_lock(root / f"{power}.lock"):
        if not (final / "final.ptau").exists():
            with _building(final) as tmp:
                snarkjs("powersoftau", "new", "bls12381", str(power), tmp / "0000.ptau", timeout=7200)
                snarkjs("powersoftau", "contribute", tmp / "0000.ptau", tmp / "0001.ptau",
                        "--name=vastmanager", f"-e={ENTROPY}", timeout=7200)
                snarkjs("powersoftau", "prepare", "phase2", tmp / "0001.ptau", tmp / "final.ptau", timeout=7200)
                (tmp / "0000.ptau").unlink()
                (tmp / "0001.ptau").unlink()
    return final / "final.ptau"


@dataclass(frozen=True)
class CircuitFiles:
    """A compiled circuit with its Groth16 keys (all paths inside one cache directory)."""

    name: str
    directory: Path
    source: Path

    @property
    def r1cs(self) -> Path:
        return self.directory / f"{self.name}.r1cs"

    @property
    def sym(self) -> Path:
        return self.directory / f"{self.name}.sym"

    @property
    def wasm(self) -> Path:
        return self.directory / f"{self.name}_js" / f"{self.name}.wasm"

    @property
    def zkey(self) -> Path:
        return self.directory / f"{self.name}.zkey"

    @property
    def vkey_json(self) -> Path:
        return self.directory / "verification_key.json"

    @property
    def vkey(self) -> dict[str, Any]:
        return json.loads(self.vkey_json.read_text())

    @property
    def info(self) -> dict[str, Any]:
        """What circom reported: constraints, wires, inputs (from `snarkjs r1cs info`, cached)."""
        return json.loads((self.directory / "info.json").read_text())

    def sample_input(self) -> dict[str, Any]:
        """The example input kept beside the source (`<name>.input.json`), when there is one."""
        return json.loads(self.source.with_suffix(".input.json").read_text())


def compile_circuit(source: Path, out_dir: Path) -> None:
    """`circom2 --prime bls12381 --r1cs --wasm --sym` with INCLUDE_DIRS as include paths.

    circom2 runs in WASI and sees only paths relative to the working directory (its CLI makes
    arguments relative), so includes inside circuit files must be relative too."""
    includes = [arg for d in INCLUDE_DIRS for arg in ("-l", d)]
    run([tool_bin("circom2"), source, "--prime", "bls12381", "--r1cs", "--wasm", "--sym",
         *includes, "-o", out_dir], timeout=1800)


def _r1cs_info(r1cs: Path) -> dict[str, Any]:
    out = snarkjs("r1cs", "info", r1cs)
    info: dict[str, Any] = {}
    for key, label in (("curve", "Curve"), ("wires", "# of Wires"), ("constraints", "# of Constraints"),
                       ("private_inputs", "# of Private Inputs"), ("public_inputs", "# of Public Inputs"),
                       ("outputs", "# of Outputs")):
        m = re.search(rf"{re.escape(label)}: (\S+)", out)
        if m:
            info[key] = m.group(1) if key == "curve" else int(m.group(1))
    return info


def build_circuit(source: Path, *, power: int = 10, cache_root: Path = FIXTURE_CACHE) -> CircuitFiles:
    """Compile `source`, run the Groth16 setup on a 2^power powers of tau; cached by content."""
    ensure_node_tools()
    source = Path(source).resolve()
    name = source.stem
    final = cache_root / "circuits" / f"{name}-{source_digest(source)}"
    files = CircuitFiles(name, final, source)
    if (final / "verification_key.json").exists():
        return files
    ptau = powers_of_tau(power, cache_root)
    with file_lock(final.with_suffix(".lock")):
        if not (final / "verification_key.json").exists():
            with _building(final) as tmp:
                compile_circuit(source, tmp)
                info = _r1cs_info(tmp / f"{name}.r1cs")
                (tmp / "info.json").write_text(json.dumps(info))
                snarkjs("groth16", "setup", tmp / f"{name}.r1cs", ptau, tmp / "0000.zkey", timeout=7200)
                snarkjs("zkey", "contribute", tmp / "0000.zkey", tmp / f"{name}.zkey",
                        "--name=vastmanager", f"-e={ENTROPY}", timeout=7200)
                (tmp / "0000.zkey").unlink()
                snarkjs("zkey", "export", "verificationkey", tmp / f"{name}.zkey", tmp / "verification_key.json")
    return files


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def wtns_calculate(circuit: CircuitFiles, inputs: dict[str, Any], out: Path) -> Path:
    """snarkjs's own witness (`snarkjs wtns calculate`) for `inputs`, written to `out`."""
    input_path = write_json(out.with_suffix(".input.json"), inputs)
    snarkjs("wtns", "calculate", circuit.wasm, input_path, out)
    return out


def groth16_prove(circuit: CircuitFiles, wtns: Path, out_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """`snarkjs groth16 prove`: the proof.json and public.json it writes, parsed."""
    proof, public = out_dir / "proof.json", out_dir / "public.json"
    snarkjs("groth16", "prove", circuit.zkey, wtns, proof, public)
    return json.loads(proof.read_text()), json.loads(public.read_text())


def groth16_verify(vkey: Path | dict[str, Any], public: list[str], proof: dict[str, Any], workdir: Path) -> bool:
    """`snarkjs groth16 verify`: True for OK, False for an invalid proof, ToolError otherwise."""
    workdir.mkdir(parents=True, exist_ok=True)
    vkey_path = vkey if isinstance(vkey, Path) else write_json(workdir / "vkey.json", vkey)
    pub = write_json(workdir / "verify-public.json", public)
    prf = write_json(workdir / "verify-proof.json", proof)
    proc = subprocess.run([str(tool_bin("snarkjs")), "groth16", "verify", str(vkey_path), str(pub), str(prf)],
                          capture_output=True, text=True, timeout=300)
    text = proc.stdout + proc.stderr
    if proc.returncode == 0 and "OK!" in text:
        return True
    if "Invalid proof" in text:
        return False
    raise ToolError(f"snarkjs groth16 verify exited {proc.returncode}:\n{text[-2000:]}")
