"""The circom modules pool children import load no Django (a spawned child has none configured)."""
from __future__ import annotations

import subprocess
import sys

from tests.circom.tools import REPO

PURE = ["gpu_engine.circom.api", "gpu_engine.circom.witness", "gpu_engine.circom.signals", "gpu_engine.circom.sandbox",
        "gpu_engine.circom.bundle_check", "gpu_engine.groth16.keyfile",
        "gpu_engine.circom.snarkjs_json", "gpu_engine.engine.proving"]


def test_pool_side_modules_import_no_django():
    code = ("import sys\n" + "".join(f"import {m}\n" for m in PURE)
            + "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
            + "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
