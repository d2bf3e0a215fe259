"""One frame encoder: a snapshot framed from its dict (the page's first paint, a resync) and the same
snapshot framed from the publisher's pre-encoded text carry the same data and the same engine partial,
and the page shows exactly the partial the stream sends."""
from __future__ import annotations

import asyncio
import json

import pytest

from statuspanel.render.engine import render_engine
from statuspanel.stream import frames
from tests.panel.helpers import busy_tracker, cuzk_fixture

pytestmark = pytest.mark.usefixtures("fresh_render_caches")


def _snapshots() -> list[dict]:
    ours = busy_tracker().snapshot()
    ours["engine_id"], ours["seq"] = "box-1", 7
    foreign = cuzk_fixture()
    foreign["seq"] = 3
    return [ours, foreign]


@pytest.mark.parametrize("with_html", [True, False])
def test_dict_and_preencoded_snapshots_make_the_same_frame(with_html):
    for snap in _snapshots():
        from_dict = json.loads(frames.snapshot_frame(snap, with_html=with_html))
        frames.frame_cache.clear()
        engine_id = from_dict["engine_id"]
        text = json.dumps(snap)
        from_text = json.loads(asyncio.run(frames.encoded_snapshot_frame_async(engine_id, snap["seq"], text,
                                                                               with_html=with_html)))
        assert from_dict == from_text
        assert from_dict["type"] == "snapshot" and from_dict["seq"] == snap["seq"]
        assert ("html" in from_dict) is with_html


def test_stream_frame_html_is_the_page_partial():
    snap = _snapshots()[0]
    frame = json.loads(frames.snapshot_frame(snap, with_html=True))
    assert frame["html"] == render_engine(snap)
    assert 'data-engine-id="box-1"' in frame["html"] or "box-1" in frame["html"]
