"""manage.py genparams [--kind K] [--force]: generate (or check) the Groth16 parameters, a trusted setup.

Without --force a kind's parameters are generated only when no file exists and no proof of the kind
was issued yet; an existing file is checked and its key fingerprint printed. --force makes a new
setup over whatever is there (a new key: proofs issued under the old one no longer verify)."""
from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from gpu_engine import validation
from gpu_engine.groth16 import api, params_cache
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.trusted_setup import issued_under, prepare_params


class Command(BaseCommand):
    help = "Generate the Groth16 parameters of every proof kind (or one) into the parameter directory."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--kind", help=f"only this proof kind ({', '.join(PROOF_KINDS)})")
        parser.add_argument("--scale", type=int, default=None, help="circuit scale (default: CIRCUIT_SCALE)")
        parser.add_argument("--params-dir", default=None, help="parameter directory (default: PARAMS_DIR)")
        parser.add_argument("--force", action="store_true",
                            help="make a new setup even over an existing or corrupt file (a new verifying key)")

    def handle(self, *args, **opts) -> None:
        scale = opts["scale"] if opts["scale"] is not None else settings.CIRCUIT_SCALE
        if scale < 1:
            raise CommandError(f"--scale must be a positive integer, got {scale}")
        params_dir = opts["params_dir"] or settings.PARAMS_DIR
        try:
            kinds = [validation.validate_kind(opts["kind"])] if opts["kind"] is not None else list(PROOF_KINDS)
        except validation.JobError as exc:
            raise CommandError(f"--kind: {exc}") from None
        for kind in kinds:
            _, shape_hash = params_cache.circuit_shape(kind, scale)
            path = params_cache.params_path(params_dir, kind, shape_hash)
            self.stdout.write(f"{kind} (scale {scale}): {path}")
            last = [0.0]

            def progress(step: str, done: int, total: int) -> None:
                now = time.monotonic()
                if step == "done" or now - last[0] >= 0.5:
                    last[0] = now
                    self.stdout.write(f"  {step}: {done}/{total} points ({100 * done // max(total, 1)}%)")

            t0 = time.perf_counter()
            try:
                if opts["force"]:
                    params = api.regenerate_params(kind, params_dir, scale, progress)
                    issued, _ = issued_under(kind)
                    if issued:
                        self.stderr.write(f"  warning: {issued} {kind} proof(s) issued under the previous key will "
                                          "no longer verify against this one")
                else:
                    params = prepare_params(kind, params_dir, scale, progress)
            except api.ParamsUnavailable as exc:
                raise CommandError(str(exc)) from None
            except OSError as exc:  # the directory cannot be made or written
                raise CommandError(f"--params-dir {params_dir}: {exc.strerror or exc}") from None
            self.stdout.write(self.style.SUCCESS(
                f"  ready: {params.num_constraints} constraints, domain 2^{params.domain_size.bit_length() - 1}, "
                f"{params.num_public} public inputs ({time.perf_counter() - t0:.2f} s)"
            ))
            self.stdout.write(f"  key {params.vk.fingerprint()}")
