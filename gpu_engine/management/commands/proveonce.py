"""manage.py proveonce --kind K [--job-id ID] --out FILE: prove one job here, write its bundle."""
from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from gpu_engine import validation
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import api
from gpu_engine.groth16.keyfile import write_atomic
from gpu_engine.kinds import PROOF_KINDS, get_kind
from gpu_engine.trusted_setup import prepare_params


class Command(BaseCommand):
    help = "Prove every partition of one job on the CPU, verify it, and write the JSON proof bundle."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--kind", required=True, help=f"one of: {', '.join(PROOF_KINDS)}")
        parser.add_argument("--job-id", default=None, help="job id (default: a fresh one)")
        parser.add_argument("--out", required=True, help="where to write the bundle (JSON)")
        parser.add_argument("--scale", type=int, default=None, help="circuit scale (default: CIRCUIT_SCALE)")
        parser.add_argument("--params-dir", default=None, help="parameter directory (default: PARAMS_DIR)")

    def handle(self, *args, **opts) -> None:
        try:  # the job rules of every entry point (gpu_engine/validation.py)
            kind = validation.validate_kind(opts["kind"])
            job_id = validation.validate_job_id(opts["job_id"] or f"{kind}-{uuid.uuid4().hex[:12]}")
        except validation.JobError as exc:
            raise CommandError(str(exc)) from None
        scale = opts["scale"] if opts["scale"] is not None else settings.CIRCUIT_SCALE
        if scale < 1:
            raise CommandError(f"--scale must be a positive integer, got {scale}")
        params_dir = opts["params_dir"] or settings.PARAMS_DIR
        out = Path(opts["out"])
        # Checked before proving, which takes a while: the bundle must have somewhere to go.
        if not out.name or out.is_dir():
            raise CommandError(f"--out must name a file, got {opts['out']!r}")
        if not out.parent.is_dir():
            raise CommandError(f"--out: directory {str(out.parent)!r} does not exist")
        t0 = time.perf_counter()
        try:
            params = prepare_params(kind, params_dir, scale)
        except api.ParamsUnavailable as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:  # the parameter directory cannot be made or written
            raise CommandError(f"--params-dir {params_dir}: {exc.strerror or exc}") from None
        backend = CpuBackend()
        proofs = []
        for index in range(get_kind(kind).partitions):
            witness = api.synthesize_partition(kind, job_id, index, scale)
            pp = api.prove_partition(params, witness, backend)
            if not api.verify_partition(params.vk, pp.public_inputs, pp.proof):
                raise CommandError(f"partition {index} of {job_id} did not verify", returncode=1)
            t = pp.timings
            self.stdout.write(
                f"partition {index}: synthesis {t['synthesis_ms']:.0f} ms, ntt {t['ntt_ms']:.0f} ms, "
                f"msm g1 {t['msm_g1_ms']:.0f} ms, msm g2 {t['msm_g2_ms']:.0f} ms"
            )
            proofs.append(pp)
        bundle = api.make_bundle(kind, job_id, params.vk, proofs)
        try:
            write_atomic(out, json.dumps(bundle, indent=1))
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc}") from None
        self.stdout.write(self.style.SUCCESS(
            f"{job_id}: {len(proofs)} partition(s) proved and verified in {time.perf_counter() - t0:.2f} s -> {out}"
        ))
