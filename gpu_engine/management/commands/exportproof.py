"""`manage.py exportproof JOB --format snarkjs --out DIR`: a circuit job's proofs as snarkjs's files."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from gpu_engine.circom import registry, snarkjs_export
from gpu_engine.groth16.bundle import BundleFormatError
from gpu_engine.models import JobStatus, ProofJob


class Command(BaseCommand):
    help = ("Write a done circuit job's proofs as proof_<i>.json and public_<i>.json (what `snarkjs groth16 "
            "prove` writes), ready for `snarkjs groth16 verify verification_key.json public_<i>.json proof_<i>.json`.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("job", help="the job id")
        parser.add_argument("--format", choices=["snarkjs"], default="snarkjs", help="the file format (snarkjs)")
        parser.add_argument("--out", required=True, type=Path, help="the directory to write into (created)")
        parser.add_argument("--vkey", action="store_true", help="also write the circuit's verification_key.json")

    def handle(self, *args: Any, **opts: Any) -> None:
        job = ProofJob.objects.filter(job_id=opts["job"]).first()
        if job is None:
            raise CommandError(f"no job with id {opts['job']!r}")
        circuit = registry.get_circuit(job.proof_kind)
        if circuit is None:
            raise CommandError(f"job {job.job_id} is a {job.proof_kind} job; only circuit jobs export to snarkjs")
        if job.status != JobStatus.DONE or job.bundle is None:
            raise CommandError(f"job {job.job_id} is {job.status}; its proofs exist once it is done")
        out: Path = opts["out"]
        if out.exists() and not out.is_dir():
            raise CommandError(f"--out {out}: exists and is not a directory")
        try:
            written = snarkjs_export.write_files(job.bundle, out)
        except BundleFormatError as exc:
            raise CommandError(f"job {job.job_id}: stored bundle is malformed: {exc}") from None
        except OSError as exc:
            raise CommandError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
        if opts["vkey"]:
            import json

            from gpu_engine.groth16.keyfile import write_atomic

            path = out / "verification_key.json"
            try:
                write_atomic(path, json.dumps(circuit.vkey, indent=1) + "\n")
            except OSError as exc:
                raise CommandError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
            written.append(path)
        for path in written:
            self.stdout.write(str(path))
