"""manage.py exportkey --kind K --out FILE: write a kind's verifying key for `verifyproof --key`.

A verifier elsewhere needs only this small file (not the parameters) to check bundles against the
engine's key: {"proof_kind", "scale", "vk_fingerprint", "vk"} with `vk` in the bundle format."""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from gpu_engine import validation
from gpu_engine.groth16 import api
from gpu_engine.groth16.keyfile import write_atomic


class Command(BaseCommand):
    help = "Write the verifying key of one proof kind (from the parameter directory) to a JSON file."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--kind", required=True, help=f"one of: {', '.join(api.PROOF_KINDS)}")
        parser.add_argument("--out", required=True, help="where to write the key (JSON)")
        parser.add_argument("--scale", type=int, default=None, help="circuit scale (default: CIRCUIT_SCALE)")
        parser.add_argument("--params-dir", default=None, help="parameter directory (default: PARAMS_DIR)")

    def handle(self, *args, **opts) -> None:
        try:
            kind = validation.validate_kind(opts["kind"])
        except validation.JobError as exc:
            raise CommandError(f"--kind: {exc}") from None
        scale = opts["scale"] if opts["scale"] is not None else settings.CIRCUIT_SCALE
        if scale < 1:
            raise CommandError(f"--scale must be a positive integer, got {scale}")
        try:
            vk = api.load_params(kind, opts["params_dir"] or settings.PARAMS_DIR, scale).vk
        except api.ParamsUnavailable as exc:
            raise CommandError(str(exc)) from None
        out = Path(opts["out"])
        data = {"proof_kind": kind, "scale": scale, "vk_fingerprint": vk.fingerprint(), "vk": api.vk_json(vk)}
        try:
            write_atomic(out, json.dumps(data, indent=1))
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
        self.stdout.write(f"{kind} key {data['vk_fingerprint']} -> {out}")
