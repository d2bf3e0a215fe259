"""Status documents that are valid and huge: what a broken or hostile daemon may answer within the
byte cap (the fleet bounds tests and bench/fleet_big_source.py)."""
from __future__ import annotations

import copy
import json
from typing import Any

from tests.fleet.cuzk_server import CuzkServer, load_fixture

STATES = ("idle", "proving", "error")


def many_workers(workers: int, *, kinds: int = 0) -> dict[str, Any]:
    """The fixture with `workers` GPU workers (ids and states from the daemon, as remote data is);
    with `kinds`, the workers claim that many made-up proof kinds and states besides the known ones."""
    doc = copy.deepcopy(load_fixture())
    rows = []
    for i in range(workers):
        state = f"state-{i % kinds}" if kinds and i % 2 else STATES[i % 3]
        row = {"worker_id": i, "gpu_ordinal": i % 8, "state": state, "busy_secs": 1.5, "current_job": None,
               "current_partition": None}
        if kinds:
            row["current_proof_kind"] = f"kind-{i % kinds}"
        rows.append(row)
    doc["gpu_workers"] = rows
    return doc


def five_megabytes() -> dict[str, Any]:
    """50,000 workers: about 5 MB of valid JSON, under the 8 MiB byte cap."""
    return many_workers(50_000)


class StaticServer(CuzkServer):
    """A cuzk-like server answering one document encoded once (a big one costs the server nothing)."""

    def __init__(self, doc: dict[str, Any], **kwargs: Any) -> None:
        super().__init__("fixture", **kwargs)
        self.encoded = json.dumps(doc).encode()

    def body(self) -> tuple[int, str, bytes]:
        return 200, "application/json", self.encoded
