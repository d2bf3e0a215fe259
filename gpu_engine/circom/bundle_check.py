"""Checking a circuit job's proof bundle against the circuit's trusted key: what a verified one proves.

A built-in kind's statement is derived from (kind, job id, index) (groth16/binding.py). A circom
circuit's statement is its public signals, which come from the submitter's inputs: they cannot be
derived from the job id. So a circuit bundle is checked like this:

- the key is the registered circuit's (or a snarkjs `verification_key.json` the caller trusts),
  never the one embedded in the bundle; the bundle's `vk_fingerprint` must name it;
- each partition verifies against that key with the public signals it carries;
- the partitions are 0..n-1, each once;
- when the caller knows the job (`expected`: its stored partitions' public signals, from this
  engine's database), the count and every partition's signals must be that job's: a bundle
  relabelled with another job's id, or with signals swapped between partitions, is named.

The same proofs verify with `snarkjs groth16 verify` (`?format=snarkjs`, `exportproof`).
Pure (no Django).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from gpu_engine.groth16.binding import BundleCheck
from gpu_engine.groth16.bundle import parse_bundle, parse_fingerprint
from gpu_engine.groth16.keys import VerifyingKey
from gpu_engine.groth16.verifier import verify_partition


def check_circuit_bundle(bundle: object, vk: VerifyingKey, *,
                         expected: Mapping[int, Sequence[int]] | None = None) -> BundleCheck:
    """Check a circuit `bundle` against the circuit's trusted key `vk`; BundleFormatError when malformed.

    `expected`: {partition index: public signals} of the job as this engine stored it, when known."""
    kind, job_id, embedded, parts = parse_bundle(bundle)
    fingerprint = vk.fingerprint()
    check = BundleCheck(kind, job_id, fingerprint)
    named = parse_fingerprint(cast(dict, bundle))  # parse_bundle proved it is a dict
    if named is None:
        check.notes.append("vk_fingerprint: absent (a bundle made before bundles named their key)")
    elif named != fingerprint:
        check.mismatches.append(f"vk_fingerprint: the bundle names key {named}, the trusted key of circuit {kind} "
                                f"is {fingerprint}")
    if embedded.fingerprint() != fingerprint:
        check.notes.append("vk: the embedded key is not the trusted key (informative only: not used)")
    indices = [index for index, _, _ in parts]
    total = len(expected) if expected is not None else len(parts)
    missing = sorted(set(range(total)) - set(indices))
    if missing:
        check.mismatches.append(f"partitions: job {job_id} has {total}; missing index(es) "
                                f"{', '.join(map(str, missing))}")
    if len(set(indices)) != len(indices):
        check.mismatches.append("partitions: an index appears more than once")
    if expected is None:
        check.notes.append(f"job {job_id} is not known here: each proof is checked against the circuit's key with "
                           "its own public signals (a circuit's statement is its inputs, not derivable from the "
                           "job id)")
    for pos, (index, signals, proof) in enumerate(parts):
        where = f"partitions[{pos}]"
        if index >= total:
            check.mismatches.append(f"{where}.index: partition {index} out of range (job {job_id} has {total})")
            check.partitions.append((index, False))
            continue
        if len(signals) != vk.num_public:
            check.mismatches.append(f"{where}.public_inputs: the circuit's key takes {vk.num_public} public signals, "
                                    f"the bundle gives {len(signals)}")
            check.partitions.append((index, False))
            continue
        if expected is not None and list(signals) != list(expected.get(index, ())):
            check.mismatches.append(f"{where}.public_inputs: not the public signals of job {job_id}'s partition "
                                    f"{index} as stored here")
        check.partitions.append((index, verify_partition(vk, list(signals), proof)))
    return check
