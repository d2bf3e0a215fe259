"""manage.py verifyproof FILE [--key KEYFILE]: check a proof bundle against a trusted key and its own job.

The bundle is verified against the engine's own key for its kind (from the parameter directory),
or the key in KEYFILE (written by `manage.py exportkey`), never the key embedded in the bundle; the
public inputs are derived here from (kind, job id, index). Each broken binding is named.

A circom circuit's bundle is verified against the registered circuit's key (or KEYFILE: snarkjs's
`verification_key.json`, e.g. from `GET /api/circuits/NAME/vkey`) with the public signals it
carries, and, when the job is in this engine's database, bound to that job's stored signals
(gpu_engine/circom/bundle_check.py).

Exit status: 0 every partition verifies and the bundle is bound to its job and key;
1 a partition does not verify or a binding is broken; 2 the bundle is unreadable or malformed;
3 there is no trusted key to check against (parameters missing or corrupt, KEYFILE unusable).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from gpu_engine.groth16 import api

EXIT_INVALID, EXIT_MALFORMED, EXIT_NO_KEY = 1, 2, 3


def _read_json(path: Path, what: str, code: int) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise CommandError(f"{path}: cannot read the {what}: {exc.strerror or exc}", returncode=code) from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
        raise CommandError(f"{path}: malformed {what}: not JSON ({exc})", returncode=code) from None


class Command(BaseCommand):
    help = ("Verify a JSON proof bundle against the engine's key (or --key) and its job "
            "(exit 0: valid, 1: invalid or not bound, 2: malformed, 3: no trusted key).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the bundle written by proveonce or downloaded from the panel")
        parser.add_argument("--key", default=None, metavar="KEYFILE",
                            help="verify against this key file (manage.py exportkey) instead of the engine's key")
        parser.add_argument("--scale", type=int, default=None, help="circuit scale (default: CIRCUIT_SCALE)")
        parser.add_argument("--params-dir", default=None, help="parameter directory (default: PARAMS_DIR)")

    def handle(self, *args, **opts) -> None:
        path = Path(opts["file"])
        bundle = _read_json(path, "bundle", EXIT_MALFORMED)
        try:
            kind, job_id, _, _ = api.parse_bundle(bundle)
        except api.BundleFormatError as exc:
            raise CommandError(f"{path}: malformed: {exc}", returncode=EXIT_MALFORMED) from None
        scale = opts["scale"] if opts["scale"] is not None else settings.CIRCUIT_SCALE
        if scale < 1:
            raise CommandError(f"--scale must be a positive integer, got {scale}", returncode=EXIT_NO_KEY)
        if kind in api.PROOF_KINDS:
            vk, source = self._trusted_key(kind, scale, opts)
            check = api.check_bundle(bundle, vk, scale=scale)
        else:
            check, source = self._check_circuit(path, bundle, kind, job_id, opts)
        for index, ok in check.partitions:
            self.stdout.write(f"partition {index}: {'valid' if ok else 'INVALID'}")
        for note in check.notes:
            self.stdout.write(f"note: {note}")
        label = f"{kind} job {job_id}"
        failed = [index for index, ok in check.partitions if not ok]
        problems = list(check.mismatches)
        if failed:
            problems.append(f"partition(s) {', '.join(map(str, failed))} of {len(check.partitions)} failed "
                            f"verification against {source}")
        if problems:
            raise CommandError(f"{label}: " + "; ".join(problems), returncode=EXIT_INVALID)
        self.stdout.write(self.style.SUCCESS(
            f"{label}: all {len(check.partitions)} partition(s) verify against {source} ({check.key_fingerprint})"))

    def _trusted_key(self, kind: str, scale: int, opts: dict) -> tuple[api.VerifyingKey, str]:
        if opts["key"] is not None:
            key_path = Path(opts["key"])
            data = _read_json(key_path, "key file", EXIT_NO_KEY)
            vk_obj = data.get("vk", data) if isinstance(data, dict) else data
            try:
                vk = api.parse_vk(vk_obj)
            except api.BundleFormatError as exc:
                raise CommandError(f"{key_path}: malformed key file: {exc}", returncode=EXIT_NO_KEY) from None
            named = data.get("proof_kind") if isinstance(data, dict) else None
            if named is not None and named != kind:
                raise CommandError(f"proof_kind: the bundle is a {kind} proof, the key file {key_path} is for {named}",
                                   returncode=EXIT_INVALID)
            return vk, f"the key in {key_path}"
        if kind not in api.PROOF_KINDS:
            raise CommandError(f"proof_kind: unknown proof kind {kind!r}; valid kinds: {', '.join(api.PROOF_KINDS)}",
                               returncode=EXIT_INVALID)
        params_dir = opts["params_dir"] or settings.PARAMS_DIR
        try:
            return api.load_params(kind, params_dir, scale).vk, f"the engine's {kind} key"
        except api.ParamsUnavailable as exc:
            raise CommandError(str(exc), returncode=EXIT_NO_KEY) from None

    def _check_circuit(self, path: Path, bundle: Any, kind: str, job_id: str, opts: dict) -> tuple[Any, str]:
        """A circom circuit's bundle: the circuit's key (registered here, or --key), the job's stored signals."""
        from gpu_engine.circom import registry, snarkjs_json
        from gpu_engine.circom.bundle_check import check_circuit_bundle
        from gpu_engine.models import ProofJob

        circuit = registry.get_circuit(kind)
        if opts["key"] is not None:
            key_path = Path(opts["key"])
            data = _read_json(key_path, "key file", EXIT_NO_KEY)
            try:
                if isinstance(data, dict) and "protocol" in data:  # snarkjs's verification_key.json
                    vk = snarkjs_json.parse_verification_key(data)
                else:
                    vk = api.parse_vk(data.get("vk", data) if isinstance(data, dict) else data)
            except api.BundleFormatError as exc:
                raise CommandError(f"{key_path}: malformed key file: {exc}", returncode=EXIT_NO_KEY) from None
            source = f"the key in {key_path}"
        elif circuit is not None:
            vk = snarkjs_json.parse_verification_key(circuit.vkey)
            source = f"circuit {kind}'s registered key"
        else:
            raise CommandError(
                f"proof_kind: {kind!r} is neither a built-in kind ({', '.join(api.PROOF_KINDS)}) nor a circuit "
                f"registered here. Verify a circuit's proofs with its key: `verifyproof {path} --key "
                "verification_key.json` (GET /api/circuits/NAME/vkey), or with snarkjs: `exportproof JOB --format "
                "snarkjs --out DIR --vkey`, then `snarkjs groth16 verify`", returncode=EXIT_NO_KEY)
        expected = None
        job = ProofJob.objects.filter(job_id=job_id, proof_kind=kind, bundle__isnull=False).first()
        if job is not None:
            try:
                expected = {index: inputs for index, inputs, _ in api.parse_bundle(job.bundle)[3]}
            except api.BundleFormatError:
                expected = None
        try:
            return check_circuit_bundle(bundle, vk, expected=expected), source
        except api.BundleFormatError as exc:
            raise CommandError(f"{path}: malformed: {exc}", returncode=EXIT_MALFORMED) from None
