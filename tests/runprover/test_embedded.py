"""The embedded default: one `runprover` process serves the API, the panel's WebSocket and proves."""
from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import websockets

from gpu_engine.groth16.api import load_params, verify_bundle
from tests.credentials import TOKEN
from tests.process_support import free_port
from tests.runprover.helpers import ROOT, wait_until


def call(base: str, path: str, body: dict | None = None, token: str = TOKEN) -> tuple[int, dict]:
    request = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def snapshots_until(url: str, origin: str, predicate, timeout: float = 60) -> dict:
    async with websockets.connect(url, origin=origin, max_size=2**22) as ws:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            frame = json.loads(await asyncio.wait_for(ws.recv(), timeout))
            snap = frame.get("snapshot", frame)
            if predicate(snap):
                return snap
    raise AssertionError("no matching snapshot")


@pytest.mark.slow
def test_serves_api_and_live_status_while_proving(site, tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "manage.py", "runprover", "--bind", f"127.0.0.1:{port}", "--backend",
                             "cpu", "--engine-id", "embedded-1", "--synth-workers", "1"],
                            cwd=ROOT, env=site.env, stdout=log, stderr=subprocess.STDOUT)
    try:
        def healthy() -> bool:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                    return json.loads(r.read())["engine_running"]
            except OSError:
                return False

        wait_until(healthy, proc=proc)
        assert call(base, "/api/jobs", token="wrong")[0] == 401
        status, job = call(base, "/api/jobs", {"proof_kind": "porep-c2", "job_id": "ps-porep-1000-42-7"})
        assert status == 201 and job["status"] == "queued"
        snap = asyncio.run(snapshots_until(
            f"ws://127.0.0.1:{port}/ws/status/?token={TOKEN}&format=json", base,
            lambda s: any(p["job_id"] == "ps-porep-1000-42-7" for p in s.get("pipelines", []))))
        assert snap["engine_id"] == "embedded-1" and snap["backend"] == "cpu"
        wait_until(lambda: call(base, "/api/jobs/ps-porep-1000-42-7")[1]["status"] == "done", proc=proc)
        status, bundle = call(base, "/api/jobs/ps-porep-1000-42-7/proof")
        assert status == 200 and all(ok for _, ok in verify_bundle(bundle, load_params("porep-c2", site.params_dir).vk))
        assert call(base, "/api/status")[1]["counters"]["total_completed"] == 1
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(60)
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert code == 0, output
    assert f"panel      {base}/" in output and f"login      {base}/login?token=<VASTMANAGER_TOKEN>" in output
    assert TOKEN not in output  # a token from the environment is never printed (it would end up in logs)
    assert "done   porep-c2      ps-porep-1000-42-7" in output
