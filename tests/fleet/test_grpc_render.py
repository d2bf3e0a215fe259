"""The engine's section for a cuzk gRPC source: each GPU by name with its VRAM bar and the jobs it
runs, pending / in progress per proof kind, SRS entries with their tier; a gRPC-only daemon says that
partitions need `status_listen`, a merged one shows its pipelines instead and no such note."""
from __future__ import annotations

import json
from html.parser import HTMLParser

from statuspanel.fleet.cuzk import adapt_cuzk
from statuspanel.fleet.cuzk_grpc.adapt import adapt_status, grpc_only_snapshot, merge, message_dict, metrics_by_kind
from statuspanel.fleet.poller import SourceState
from statuspanel.fleet.transport import SourceConfig
from statuspanel.render.engine import render_engine
from tests.fleet.cuzk_grpc_server import GPU_NAME, VRAM_TOTAL, script_metrics, script_status
from tests.fleet.cuzk_server import FIXTURE


class Regions(HTMLParser):
    """The attributes of every element carrying data-* attributes, and the text under the gRPC region."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[dict[str, str]] = []
        self.text: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = {k: v or "" for k, v in attrs}
        if any(k.startswith("data-") for k in attrs):
            self.elements.append(attrs)
        if attrs.get("data-region") == "grpc" or self._depth:
            self._depth += 1

    def handle_endtag(self, tag):
        if self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.text.append(data)

    def having(self, key: str) -> list[dict[str, str]]:
        return [e for e in self.elements if key in e]


def _render(snap_data: dict, **cfg) -> Regions:
    state = SourceState(SourceConfig(id=1, name="box", kind="cuzk", transport="http", interval_secs=1.5, **cfg))
    state.observe_ok(snap_data, 12.0)
    parser = Regions()
    parser.feed(render_engine(state.snapshot()))
    return parser


def test_a_grpc_only_engine_shows_gpus_queues_srs_and_where_partitions_are() -> None:
    part = adapt_status(message_dict(script_status(1)))
    page = _render(grpc_only_snapshot(part, metrics_by_kind(script_metrics(1))), grpc_target="10.0.0.5:9820")
    gpu = page.having("data-gpu-name")
    assert [(g["data-gpu"], g["data-gpu-name"]) for g in gpu] == [("0", GPU_NAME)]
    vram = page.having("data-vram-total")[0]
    assert (int(vram["data-vram-used"]), int(vram["data-vram-total"])) == (VRAM_TOTAL - 2_000_000_000, VRAM_TOTAL)
    assert {e["data-job-id"] for e in page.having("data-job-id") if e.get("class") == "job-id"} >= \
        {"porep-c2-1001", "snap-2002"}
    queues = {e["data-queue"]: (e["data-pending"], e["data-in-progress"]) for e in page.having("data-queue")}
    assert queues == {"porep-c2": ("2", "1"), "snap-update": ("1", "1")}
    assert [(e["data-srs"], e["data-tier"]) for e in page.having("data-srs")] == [("porep-32g", "hot")]
    assert page.having("data-grpc-only")
    text = " ".join(" ".join(page.text).split())
    assert "status_listen" in text and "3 pending · 2 in progress" in text
    assert "24.0 GiB" in text or "24 GiB" in text
    assert not any(e.get("data-region") == "gpus" for e in page.elements)  # one GPU table, not two


def test_a_merged_engine_shows_its_pipelines_and_no_grpc_only_note() -> None:
    snap = merge(adapt_cuzk(json.loads(FIXTURE.read_text())), adapt_status(message_dict(script_status(2))))
    page = _render(snap, url="http://10.0.0.5:9821", grpc_target="10.0.0.5:9820")
    assert not page.having("data-grpc-only")
    assert any(e.get("data-region") == "pipelines" for e in page.elements)
    assert [e["data-gpu-name"] for e in page.having("data-gpu-name")] == [GPU_NAME]
    assert {e["data-queue"] for e in page.having("data-queue")} == {"porep-c2", "snap-update"}


def test_an_engine_without_grpc_has_no_grpc_region() -> None:
    page = _render(adapt_cuzk(json.loads(FIXTURE.read_text())), url="http://10.0.0.5:9821")
    assert not any(e.get("data-region") == "grpc" for e in page.elements)
