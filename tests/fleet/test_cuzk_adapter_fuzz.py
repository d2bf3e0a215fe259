"""Whatever a source answers, reading it ends in a snapshot or in `Malformed`, never in another error
(the collector would otherwise misreport a bug as the source's fault, or worse, stop)."""
from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from statuspanel.fleet.cuzk import adapt_cuzk
from statuspanel.fleet.poller import decode
from statuspanel.fleet.shape import Malformed
from tests.fleet.cuzk_server import load_fixture

FIXTURE = load_fixture()
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


def _containers(doc):
    """Every (container, key) of the document, to put a random value at."""
    out = []
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            out.extend((item, k) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            out.extend((item, i) for i in range(len(item)))
            stack.extend(item)
    return out


@settings(max_examples=300, deadline=None)
@given(data=st.data(), value=json_values)
def test_any_value_anywhere_is_read_or_malformed(data, value) -> None:
    doc = copy.deepcopy(FIXTURE)
    places = _containers(doc)
    container, key = places[data.draw(st.integers(0, len(places) - 1))]
    container[key] = value
    try:
        snap = adapt_cuzk(doc)
    except Malformed as exc:
        assert exc.field and str(exc)
    else:
        json.dumps(snap)  # what is published must encode


@settings(max_examples=200, deadline=None)
@given(doc=json_values)
def test_any_document_is_read_or_malformed(doc) -> None:
    try:
        adapt_cuzk(doc)
    except Malformed:
        pass


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_are_read_or_malformed(body: bytes) -> None:
    for kind in ("cuzk", "vastmanager"):
        try:
            decode(body, kind)
        except Malformed as exc:
            assert exc.reason in ("not-json", "too-deep", "shape")
