"""Page numbers are plain ASCII digits: what int() also reads ("1_0" as 10, " 7", "+7", other
scripts' digits) is a 400, not another page."""
from __future__ import annotations

import pytest

from tests.credentials import AUTH


@pytest.mark.django_db
@pytest.mark.parametrize("raw", ["1_0", " 1", "1 ", "+1", "-1", "١", "１", "1.0", "0x1", "1e3"])
@pytest.mark.parametrize("name", ["page", "page_size"])
def test_non_digit_numbers_are_400(client, name, raw):
    from urllib.parse import quote

    response = client.get(f"/api/jobs?{name}={quote(raw)}", **AUTH)
    assert response.status_code == 400
    assert f"{name} must be a positive integer" in response.json()["error"]


@pytest.mark.django_db
def test_plain_digits_still_work(client):
    data = client.get("/api/jobs?page=01&page_size=5", **AUTH).json()
    assert data["page"] == 1 and data["page_size"] == 5


@pytest.mark.django_db
def test_a_huge_page_number_is_400_not_500(client):
    response = client.get(f"/api/jobs?page={'9' * 5000}", **AUTH)
    assert response.status_code == 400
    assert "page must be between 1 and" in response.json()["error"]
