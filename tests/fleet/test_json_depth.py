"""A source's answer is measured for nesting before it is parsed: a deep document is `malformed`
(too deep), never a crash, even in a process whose recursion limit was raised (the C parser would
then overflow the collector thread's stack instead of raising)."""
from __future__ import annotations

import json
import sys
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from statuspanel.fleet.poller import MAX_DEPTH, decode
from statuspanel.fleet.shape import Malformed, nesting_depth

# Strings full of the characters that could fool a byte scanner: brackets, quotes, backslashes.
tricky_text = st.text(alphabet='[]{}"\\ab', max_size=8)
json_values = st.recursive(
    st.none() | st.integers() | tricky_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(tricky_text, children, max_size=3),
    max_leaves=40,
)


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@given(json_values)
def test_depth_from_bytes_equals_the_parsed_documents_depth(value):
    assert nesting_depth(json.dumps(value).encode()) == _depth(value)


@pytest.mark.parametrize("body", [b"[" * 200_000, b'{"a":' * 200_000, b"[" * 200_000 + b"]" * 200_000])
def test_a_deep_answer_is_too_deep_even_with_a_raised_recursion_limit(body):
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    outcome: list[BaseException | None] = []

    def poll() -> None:  # the collector decodes on a thread of its own, with a thread's stack
        try:
            decode(body, "cuzk")
            outcome.append(None)
        except BaseException as exc:  # noqa: B036, BLE001 - the test reports whatever came out
            outcome.append(exc)

    try:
        thread = threading.Thread(target=poll)
        thread.start()
        thread.join(30)
    finally:
        sys.setrecursionlimit(limit)
    assert len(outcome) == 1 and isinstance(outcome[0], Malformed), outcome
    assert outcome[0].reason == "too-deep" and str(MAX_DEPTH) in str(outcome[0])
