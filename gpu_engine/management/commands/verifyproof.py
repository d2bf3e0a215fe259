"""manage.py verifyproof FILE: check a proof bundle. Exit 0 all verify, 1 one does not, 2 malformed."""
from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from gpu_engine.groth16 import api


class Command(BaseCommand):
    help = "Verify every partition of a JSON proof bundle (exit 0: all valid, 1: a partition fails, 2: malformed)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the bundle written by proveonce or downloaded from the panel")

    def handle(self, *args, **opts) -> None:
        path = Path(opts["file"])
        try:
            bundle = json.loads(path.read_text())
        except OSError as exc:
            raise CommandError(f"{path}: cannot read: {exc.strerror or exc}", returncode=2) from None
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
            raise CommandError(f"{path}: malformed: not JSON ({exc})", returncode=2) from None
        try:
            results = api.verify_bundle(bundle)
        except api.BundleFormatError as exc:
            raise CommandError(f"{path}: malformed: {exc}", returncode=2) from None
        failed = [index for index, ok in results if not ok]
        for index, ok in results:
            self.stdout.write(f"partition {index}: {'valid' if ok else 'INVALID'}")
        label = f"{bundle['proof_kind']} job {bundle['job_id']}"
        if failed:
            raise CommandError(
                f"{label}: partition(s) {', '.join(map(str, failed))} of {len(results)} failed verification",
                returncode=1,
            )
        self.stdout.write(self.style.SUCCESS(f"{label}: all {len(results)} partition(s) verify"))
