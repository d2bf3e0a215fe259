"""When the engine and the commands may make a new Groth16 setup (the Django side of params_cache).

A kind's parameters are a trusted setup: its verifying key is what every proof of the kind is
checked against, so a new one makes every proof issued before it unverifiable. They are therefore
generated only where nobody can be surprised by it: when no file exists yet and no proof of the
kind was ever issued (an engine's first start, `genparams`), or on purpose (`genparams --force`).
A missing file after proofs were issued, and an unusable file always, is an error naming the file
and the command that regenerates it. Pool children and verifiers only ever read.
"""
from __future__ import annotations

from pathlib import Path

from gpu_engine.groth16.keys import Params
from gpu_engine.groth16.params_cache import (
    ParamsMissing,
    ParamsUnavailable,
    circuit_shape,
    load_params,
    params_path,
    unavailable_message,
)
from gpu_engine.groth16.setup import Progress
from gpu_engine.models import ProofJob


def issued_under(kind: str) -> tuple[int, str]:
    """(how many proofs of `kind` were issued with a recorded key, the fingerprint of the latest one)."""
    issued = ProofJob.objects.filter(proof_kind=kind).exclude(vk_fingerprint="")
    latest = issued.order_by("-finished_at", "-id").values_list("vk_fingerprint", flat=True).first()
    return issued.count(), latest or ""


def prepare_params(kind: str, params_dir: Path | str, scale: int, progress: Progress | None = None) -> Params:
    """The parameters of `kind`: read from disk; generated only when there is no file and no proof
    of the kind has been issued yet. ParamsUnavailable otherwise, naming the file and the command."""
    try:
        return load_params(kind, params_dir, scale, progress)
    except ParamsMissing:
        count, latest = issued_under(kind)
        if count:
            path = params_path(params_dir, kind, circuit_shape(kind, scale)[1])
            raise ParamsUnavailable(unavailable_message(
                kind, scale, params_dir, path,
                f"missing, but {count} {kind} proof(s) were issued under key {latest}")) from None
    return load_params(kind, params_dir, scale, progress, create=True)
