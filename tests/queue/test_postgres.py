"""PostgreSQL claims (FOR UPDATE SKIP LOCKED): concurrent engines never get the same job.

Runs real engine-side claim code in separate processes against a throwaway database on the local
server; skipped when no server answers.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")


ROOT = Path(__file__).resolve().parents[2]
JOBS = 60

CLAIMER = textwrap.dedent(
    """
    import os, sys, threading
    import django
    django.setup()
    from django.db import connection
    from gpu_engine import queue
    assert connection.vendor == "postgresql" and connection.features.has_select_for_update_skip_locked
    engine = sys.argv[1]
    out, lock = [], threading.Lock()
    barrier = threading.Barrier(3)
    def run(n):
        barrier.wait()
        while (job := queue.claim_next(f"{engine}-{n}", lease_secs=60)) is not None:
            with lock:
                out.append(job.job_id)
        connection.close()
    threads = [threading.Thread(target=run, args=(n,)) for n in range(3)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print("\\n".join(out))
    """
)


@pytest.mark.slow
def test_concurrent_claimers_never_share_a_job(pg_url, tmp_path):
    env = {**os.environ, "DATABASE_URL": pg_url, "DJANGO_SETTINGS_MODULE": "vastmanager.settings",
           "VASTMANAGER_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    setup = (
        "import django; django.setup()\n"
        "from django.core.management import call_command; call_command('migrate', verbosity=0)\n"
        "from gpu_engine import queue\n"
        "kinds = ['porep-c2', 'snap-update', 'window-post', 'winning-post']\n"
        f"[queue.submit_job(kinds[i % 4], f'pg-{{i}}') for i in range({JOBS})]\n"
    )
    subprocess.run([sys.executable, "-c", setup], env=env, cwd=ROOT, check=True, timeout=120)
    procs = [
        subprocess.Popen([sys.executable, "-c", CLAIMER, f"engine{n}"], env=env, cwd=ROOT,
                         stdout=subprocess.PIPE, text=True)
        for n in range(2)
    ]
    claimed: list[str] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        claimed += [line for line in out.splitlines() if line]
    assert len(claimed) == JOBS
    assert sorted(claimed) == sorted(f"pg-{i}" for i in range(JOBS))
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT status, count(*) FROM gpu_engine_proofjob GROUP BY status").fetchall()
        attempts = conn.execute("SELECT max(attempts) FROM gpu_engine_proofjob").fetchone()[0]
    assert rows == [("running", JOBS)] and attempts == 1
