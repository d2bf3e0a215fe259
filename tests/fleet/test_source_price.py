"""A source's hourly price: one rule (SourceForm) for `addsource --price-per-hour` and the admin form."""
from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from statuspanel.fleet.forms import SourceForm
from statuspanel.models import Source

pytestmark = pytest.mark.django_db


def _add(*args: str) -> str:
    out = StringIO()
    call_command("addsource", *args, stdout=out)
    return out.getvalue()


def test_addsource_stores_the_price_and_replace_keeps_it_unless_given() -> None:
    assert "2.5 per hour" in _add("box", "--kind", "cuzk", "--url", "http://10.0.0.5:9821", "--price-per-hour", "2.5")
    assert Source.objects.get(name="box").price_per_hour == Decimal("2.5")
    _add("box", "--kind", "cuzk", "--url", "http://10.0.0.6:9821", "--replace")
    assert Source.objects.get(name="box").price_per_hour == Decimal("2.5")
    _add("box", "--kind", "cuzk", "--url", "http://10.0.0.6:9821", "--replace", "--price-per-hour", "")
    assert Source.objects.get(name="box").price_per_hour is None


@pytest.mark.parametrize(("price", "message"), [("-1", "0 or more"), ("abc", "number"), ("NaN", "number"),
                                                ("1e12", "digits")])
def test_a_bad_price_is_refused_the_same_way_by_command_and_form(price: str, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        _add("box", "--kind", "cuzk", "--url", "http://10.0.0.5:9821", "--price-per-hour", price)
    assert not Source.objects.exists()
    form = SourceForm({"name": "box", "kind": "cuzk", "url": "http://10.0.0.5:9821", "price_per_hour": price,
                       "enabled": True})
    assert not form.is_valid() and message in " ".join(form.errors["price_per_hour"])
