"""The one exchange format for proofs leaving the engine (file, API, admin download).

  {"proof_kind", "job_id", "vk_fingerprint",
   "vk": {"alpha_g1", "beta_g2", "gamma_g2", "delta_g2", "ic": [...]},
   "partitions": [{"index", "public_inputs": [...], "proof": {"a", "b", "c"}}]}

`vk_fingerprint` names the verifying key the proofs were made under (`VerifyingKey.fingerprint`);
the embedded `vk` is informative only: a verifier checks a bundle against its own trusted key and
the public inputs it derives from (kind, job id, index) itself (groth16/binding.py).

A G1 point is [x, y]; a G2 point is [[x_c0, x_c1], [y_c0, y_c1]] (Fp2 = c0 + c1*u);
coordinates and public inputs are decimal strings; the point at infinity is all "0".
Parsing checks every point is on its curve and in the prime-order subgroup, so a
malformed bundle is a `BundleFormatError` naming the field, never a silent rejection.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.groth16.field import R
from gpu_engine.groth16.keys import VerifyingKey
from gpu_engine.groth16.points import g1_from_ints, g1_to_ints, g2_from_ints, g2_to_ints
from gpu_engine.groth16.prover import PartitionProof, Proof

_DECIMAL = re.compile(r"[0-9]{1,200}")
_FINGERPRINT = re.compile(r"[0-9a-f]{64}")


class BundleFormatError(ValueError):
    """The bundle is not in the exchange format; the message names the offending field."""


def g1_json(p: G1Point) -> list[str]:
    return [str(v) for v in g1_to_ints(p)]


def g2_json(p: G2Point) -> list[list[str]]:
    x, y = g2_to_ints(p)
    return [[str(x[0]), str(x[1])], [str(y[0]), str(y[1])]]


def vk_json(vk: VerifyingKey) -> dict:
    """A verifying key in the exchange format (a bundle's `vk`, a `--key` file's `vk`)."""
    return {
        "alpha_g1": g1_json(vk.alpha_g1),
        "beta_g2": g2_json(vk.beta_g2),
        "gamma_g2": g2_json(vk.gamma_g2),
        "delta_g2": g2_json(vk.delta_g2),
        "ic": [g1_json(p) for p in vk.ic],
    }


def make_bundle(kind: str, job_id: str, vk: VerifyingKey, proofs: Sequence[PartitionProof]) -> dict:
    return {
        "proof_kind": kind,
        "job_id": job_id,
        "vk_fingerprint": vk.fingerprint(),
        "vk": vk_json(vk),
        "partitions": [
            {
                "index": p.index,
                "public_inputs": [str(x) for x in p.public_inputs],
                "proof": {"a": g1_json(p.proof.a), "b": g2_json(p.proof.b), "c": g1_json(p.proof.c)},
            }
            for p in sorted(proofs, key=lambda p: p.index)
        ],
    }


def _field(obj: object, key: str, where: str) -> object:
    if not isinstance(obj, dict):
        raise BundleFormatError(f"{where or 'bundle'}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise BundleFormatError(f"{where + '.' if where else ''}{key}: missing")
    return obj[key]


def _decimal(value: object, where: str) -> int:
    if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
        raise BundleFormatError(f"{where}: expected a decimal string, got {value!r:.80}")
    return int(value)


def _pair(value: object, where: str) -> list:
    if not isinstance(value, list) or len(value) != 2:
        raise BundleFormatError(f"{where}: expected a list of 2, got {value!r:.80}")
    return value


def _g1(value: object, where: str) -> G1Point:
    x, y = _pair(value, where)
    try:
        return g1_from_ints(_decimal(x, f"{where}[0]"), _decimal(y, f"{where}[1]"))
    except ValueError as exc:
        raise BundleFormatError(f"{where}: {exc}") from None


def _g2(value: object, where: str) -> G2Point:
    x, y = _pair(value, where)
    xs, ys = _pair(x, f"{where}[0]"), _pair(y, f"{where}[1]")
    coords = [_decimal(c, f"{where}[{i // 2}][{i % 2}]") for i, c in enumerate(xs + ys)]
    try:
        return g2_from_ints((coords[0], coords[1]), (coords[2], coords[3]))
    except ValueError as exc:
        raise BundleFormatError(f"{where}: {exc}") from None


def parse_vk(obj: object) -> VerifyingKey:
    ic = _field(obj, "ic", "vk")
    if not isinstance(ic, list) or not ic:
        raise BundleFormatError("vk.ic: expected a non-empty list of G1 points")
    return VerifyingKey(
        alpha_g1=_g1(_field(obj, "alpha_g1", "vk"), "vk.alpha_g1"),
        beta_g2=_g2(_field(obj, "beta_g2", "vk"), "vk.beta_g2"),
        gamma_g2=_g2(_field(obj, "gamma_g2", "vk"), "vk.gamma_g2"),
        delta_g2=_g2(_field(obj, "delta_g2", "vk"), "vk.delta_g2"),
        ic=[_g1(p, f"vk.ic[{i}]") for i, p in enumerate(ic)],
    )


def parse_fingerprint(bundle: object) -> str | None:
    """The key fingerprint a bundle names (None for bundles made before they named one)."""
    if not isinstance(bundle, dict):
        raise BundleFormatError(f"bundle: expected an object, got {type(bundle).__name__}")
    value = bundle.get("vk_fingerprint")
    if value is None:
        return None
    if not isinstance(value, str) or not _FINGERPRINT.fullmatch(value):
        raise BundleFormatError(f"vk_fingerprint: expected 64 lowercase hex digits, got {value!r:.80}")
    return value


def parse_bundle(bundle: object) -> tuple[str, str, VerifyingKey, list[tuple[int, list[int], Proof]]]:
    """(proof_kind, job_id, embedded vk, [(index, public_inputs, proof)]) or BundleFormatError."""
    kind = _field(bundle, "proof_kind", "")
    job_id = _field(bundle, "job_id", "")
    if not isinstance(kind, str) or not kind:
        raise BundleFormatError("proof_kind: expected a non-empty string")
    if not isinstance(job_id, str) or not job_id:
        raise BundleFormatError("job_id: expected a non-empty string")
    parse_fingerprint(bundle)
    vk = parse_vk(_field(bundle, "vk", ""))
    parts = _field(bundle, "partitions", "")
    if not isinstance(parts, list) or not parts:
        raise BundleFormatError("partitions: expected a non-empty list")
    out, seen = [], set()
    for i, part in enumerate(parts):
        where = f"partitions[{i}]"
        index = _field(part, "index", where)
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise BundleFormatError(f"{where}.index: expected a non-negative integer, got {index!r:.40}")
        if index in seen:
            raise BundleFormatError(f"{where}.index: partition {index} appears twice")
        seen.add(index)
        inputs = _field(part, "public_inputs", where)
        if not isinstance(inputs, list):
            raise BundleFormatError(f"{where}.public_inputs: expected a list")
        values = [_decimal(x, f"{where}.public_inputs[{j}]") for j, x in enumerate(inputs)]
        for j, v in enumerate(values):
            if v >= R:
                raise BundleFormatError(f"{where}.public_inputs[{j}]: not an element of Fr (>= r)")
        proof = _field(part, "proof", where)
        pw = f"{where}.proof"
        out.append((index, values, Proof(
            _g1(_field(proof, "a", pw), f"{pw}.a"), _g2(_field(proof, "b", pw), f"{pw}.b"),
            _g1(_field(proof, "c", pw), f"{pw}.c"),
        )))
    return kind, job_id, vk, out
