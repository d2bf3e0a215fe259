"""Checking a proof bundle against a trusted key and its own job: what a verified bundle proves.

A Groth16 proof only says "someone knew a witness for these public inputs under this key". A
bundle is worth something only when (1) the key is one the verifier trusts, not the one shipped
inside the bundle, and (2) the public inputs are the ones of this job's statement, derived here
from (proof kind, job id, partition index) exactly as the prover derived them. Otherwise a bundle
relabelled with another job id or kind, or proved under a key of the sender's own making, would
"verify". Every broken binding is reported by name; the embedded key only earns a note.

Pure (no Django): the caller picks the trusted key (the engine's parameters or a key file).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpu_engine.groth16.bundle import parse_bundle, parse_fingerprint
from gpu_engine.groth16.circuits import build
from gpu_engine.groth16.keys import VerifyingKey
from gpu_engine.groth16.verifier import verify_partition
from gpu_engine.kinds import PROOF_KINDS


@dataclass
class BundleCheck:
    """The verdict on one bundle. `partitions`: (index, verified against the trusted key with the
    derived inputs); `mismatches`: each broken binding, by the field it concerns; `notes`: what is
    worth saying but proves nothing either way."""

    kind: str
    job_id: str
    key_fingerprint: str
    partitions: list[tuple[int, bool]] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.partitions) and not self.mismatches and all(ok for _, ok in self.partitions)


def statement_inputs(kind: str, job_id: str, index: int, scale: int = 1) -> list[int]:
    """The public inputs of partition `index` of job `job_id`: what its proof must be a proof of."""
    return build(kind, job_id, index, scale).public_inputs


def check_bundle(bundle: object, vk: VerifyingKey, *, scale: int = 1) -> BundleCheck:
    """Check `bundle` against the trusted key `vk` (the engine's key for the bundle's kind).

    BundleFormatError (from parsing) when it is malformed; otherwise a BundleCheck."""
    kind, job_id, embedded, parts = parse_bundle(bundle)
    fingerprint = vk.fingerprint()
    check = BundleCheck(kind, job_id, fingerprint)
    spec = PROOF_KINDS.get(kind)
    if spec is None:
        check.mismatches.append(f"proof_kind: unknown proof kind {kind!r}; valid kinds: {', '.join(PROOF_KINDS)}")
        return check
    named = parse_fingerprint(bundle)
    if named is None:
        check.notes.append("vk_fingerprint: absent (a bundle made before bundles named their key)")
    elif named != fingerprint:
        check.mismatches.append(f"vk_fingerprint: the bundle names key {named}, the trusted {kind} key is "
                                f"{fingerprint}")
    embedded_fingerprint = embedded.fingerprint()
    if named is not None and embedded_fingerprint != named:  # the bundle contradicts itself
        check.mismatches.append(f"vk: the embedded key ({embedded_fingerprint}) is not the key the bundle "
                                f"names ({named})")
    if embedded_fingerprint != fingerprint:
        check.notes.append("vk: the embedded key is not the trusted key (informative only: not used)")
    indices = {index for index, _, _ in parts}
    missing = sorted(set(range(spec.partitions)) - indices)
    if missing:
        check.mismatches.append(f"partitions: {kind} has {spec.partitions}; missing index(es) "
                                f"{', '.join(map(str, missing))}")
    for pos, (index, inputs, proof) in enumerate(parts):
        where = f"partitions[{pos}]"
        if index >= spec.partitions:
            check.mismatches.append(f"{where}.index: partition {index} out of range for {kind} "
                                    f"({spec.partitions} partitions)")
            check.partitions.append((index, False))
            continue
        expected = statement_inputs(kind, job_id, index, scale)
        if len(expected) != vk.num_public:
            check.mismatches.append(f"{where}.public_inputs: the trusted key takes {vk.num_public} inputs, "
                                    f"{kind} at scale {scale} has {len(expected)} (wrong key or scale)")
            check.partitions.append((index, False))
            continue
        if inputs != expected:
            check.mismatches.append(f"{where}.public_inputs: not the inputs of ({kind}, {job_id}, {index})")
        # Verified against the statement derived here: a proof of other inputs cannot pass.
        check.partitions.append((index, verify_partition(vk, expected, proof)))
    return check


def verify_bundle(bundle: object, vk: VerifyingKey, *, scale: int = 1) -> list[tuple[int, bool]]:
    """[(partition index, verified and bound)]: each partition against the trusted key `vk` with the
    inputs derived from (kind, job id, index). Use `check_bundle` for the named mismatches."""
    check = check_bundle(bundle, vk, scale=scale)
    bound = not check.mismatches
    return [(index, ok and bound) for index, ok in check.partitions]
