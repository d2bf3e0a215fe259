"""Arbitrary JSON sent as a circuit job is answered (201 or a 4xx JSON error), never a server error."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.circom.registered import register
from tests.credentials import AUTH

pytestmark = pytest.mark.django_db

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**300, 2**300) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
SIGNALS = st.dictionaries(st.sampled_from(["a", "b", "c", "a[0]", ""]), JSON, max_size=3)


@pytest.fixture
def mult(multiplier_circuit, settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"
    return register(multiplier_circuit, "mult")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.one_of(JSON, st.lists(SIGNALS | JSON, max_size=3)), field=st.sampled_from(["inputs", "witnesses"]))
def test_any_body_is_answered(client, mult, items, field):
    body = json.dumps({"proof_kind": "mult", field: items})
    response = client.post("/api/jobs", body, content_type="application/json", **AUTH)
    assert response.status_code in (200, 201, 400, 413), response.content
    assert response["Content-Type"] == "application/json"
    if response.status_code >= 400:
        assert response.json()["error"]
