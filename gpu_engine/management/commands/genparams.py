"""manage.py genparams [--kind K]: generate (or check) the cached Groth16 parameters."""
from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from gpu_engine.groth16 import api, params_cache
from gpu_engine.kinds import PROOF_KINDS


class Command(BaseCommand):
    help = "Generate the Groth16 parameters of every proof kind (or one) into the parameter directory."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--kind", choices=sorted(PROOF_KINDS), help="only this proof kind")
        parser.add_argument("--scale", type=int, default=None, help="circuit scale (default: CIRCUIT_SCALE)")
        parser.add_argument("--params-dir", default=None, help="parameter directory (default: PARAMS_DIR)")

    def handle(self, *args, **opts) -> None:
        scale = opts["scale"] if opts["scale"] is not None else settings.CIRCUIT_SCALE
        if scale < 1:
            raise CommandError(f"--scale must be a positive integer, got {scale}")
        params_dir = opts["params_dir"] or settings.PARAMS_DIR
        kinds = [opts["kind"]] if opts["kind"] else list(PROOF_KINDS)
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
                params = api.load_params(kind, params_dir, scale, progress)
            except OSError as exc:  # the directory cannot be made or written
                raise CommandError(f"--params-dir {params_dir}: {exc.strerror or exc}") from None
            self.stdout.write(self.style.SUCCESS(
                f"  ready: {params.num_constraints} constraints, domain 2^{params.domain_size.bit_length() - 1}, "
                f"{params.num_public} public inputs ({time.perf_counter() - t0:.2f} s)"
            ))
