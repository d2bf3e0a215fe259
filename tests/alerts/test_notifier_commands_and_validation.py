"""The notifier commands and the one rule set behind them and the admin: bad input named with a
non-zero exit and nothing saved; secrets never printed; thresholds out of range refused."""
from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from statuspanel.alerts.forms import NotifierForm, RuleOverrideForm, RuleSettingForm
from statuspanel.alerts.models import Notifier, RuleOverride, RuleSetting
from tests.alerts.conftest import SECRET
from tests.alerts.receivers import WebhookReceiver

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("args, message", [
    (["--kind", "webhook", "--url", "ftp://hooks.example.com/x"], "must start with http:// or https://"),
    (["--kind", "webhook", "--url", "https://"], "has no host"),
    (["--kind", "webhook"], "needs a URL"),
    (["--kind", "webhook", "--url", "https://u:p@hooks.example.com/"], "no credentials"),
    (["--kind", "webhook", "--url", "https://h.example.com/", "--secret", "short"], "at least 16"),
    (["--kind", "slack", "--url", "https://hooks.slack.com/x", "--secret", SECRET], "Slack notifier has no secret"),
    (["--kind", "email"], "at least one recipient"),
    (["--kind", "email", "--to", "not-an-address"], "not an email address: 'not-an-address'"),
    (["--kind", "email", "--to", "a@example.com", "--url", "https://h.example.com/"], "has no URL"),
], ids=["scheme", "no-host", "no-url", "credentials", "short-secret", "slack-secret", "no-recipient", "bad-address",
        "email-url"])
def test_bad_notifiers_are_refused_with_the_reason(args, message) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("addnotifier", "n1", *args)
    assert not Notifier.objects.exists()


def test_listing_never_shows_the_url_token_or_the_secret(capsys) -> None:
    call_command("addnotifier", "hook", "--kind", "webhook", "--url", "https://hooks.example.com/T0K3N-in-path",
                 "--secret", SECRET)
    call_command("addnotifier", "mail", "--kind", "email", "--to", "ops@example.com")
    call_command("listnotifiers")
    call_command("listnotifiers", "--json")
    out = capsys.readouterr().out
    assert "T0K3N" not in out and SECRET not in out
    assert "https://hooks.example.com/…" in out and "ops@example.com" in out and '"secret": "set"' in out
    with pytest.raises(CommandError, match="exists"):
        call_command("addnotifier", "hook", "--kind", "webhook", "--url", "https://other.example.com/")
    call_command("removenotifier", "hook", "mail")
    assert not Notifier.objects.exists()
    with pytest.raises(CommandError, match="no notifier named 'hook'"):
        call_command("removenotifier", "hook")


def test_an_edit_with_empty_secret_fields_keeps_them() -> None:
    call_command("addnotifier", "hook", "--kind", "webhook", "--url", "https://hooks.example.com/T0K3N",
                 "--secret", SECRET)
    notifier = Notifier.objects.get()
    form = NotifierForm(data={"name": "hook", "kind": "webhook", "url": "", "secret": "", "enabled": "on"},
                        instance=notifier)
    assert form.is_valid(), form.errors
    form.save()
    notifier.refresh_from_db()
    assert notifier.url.endswith("T0K3N") and notifier.secret == SECRET and notifier.enabled is True
    assert "T0K3N" not in str(NotifierForm(instance=notifier)) and SECRET not in str(NotifierForm(instance=notifier))


def test_testnotifier_reports_a_refusal_with_a_non_zero_exit() -> None:
    with WebhookReceiver("fail") as failing:
        call_command("addnotifier", "hook", "--kind", "webhook", "--url", failing.url)
        with pytest.raises(CommandError, match="not delivered \\(HTTP 500\\)"):
            call_command("testnotifier", "hook")
    with pytest.raises(CommandError, match="no notifier named"):
        call_command("testnotifier", "missing")


@pytest.mark.parametrize("args, message", [
    (["partition-stuck", "--threshold", "0.5"], "from 1.5 to 1000"),
    (["queue-wait", "--threshold", "nan"], "threshold: Enter a number"),
    (["queue-wait", "--threshold", "5"], "from 10 to 2592000"),
    (["source-down", "--threshold", "5"], "has no threshold"),
    (["memory-pressure", "--for", "-1"], "`for` must be from 0"),
    (["queue-wait", "--engine", "box-1", "--threshold", "60"], "no per-engine overrides"),
    (["engine-down", "--engine", "bad engine", "--threshold", "60"], "engine must be an engine id"),
])
def test_out_of_range_settings_are_refused_with_the_reason(args, message) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("setalertrule", *args)
    assert not RuleSetting.objects.exists() and not RuleOverride.objects.exists()


def test_the_admin_forms_apply_the_same_rules() -> None:
    form = RuleSettingForm(data={"rule": "failure-burst", "enabled": "on", "threshold": "0"})
    assert not form.is_valid() and "from 1 to 100000" in str(form.errors)
    form = RuleOverrideForm(data={"rule": "memory-pressure", "engine": "box-1", "threshold": "101"})
    assert not form.is_valid() and "from 1 to 100" in str(form.errors)
    assert RuleOverrideForm(data={"rule": "memory-pressure", "engine": "box-1", "threshold": "95"}).is_valid()


def test_an_override_applies_to_its_engine_only() -> None:
    from statuspanel.alerts.evaluator import load_settings
    from statuspanel.alerts.specs import Effective

    call_command("setalertrule", "memory-pressure", "--threshold", "80")
    call_command("setalertrule", "memory-pressure", "--engine", "box-1", "--threshold", "95", "--for", "10")
    call_command("setalertrule", "source-down", "--engine", "box-2", "--disable")
    effective = load_settings()
    assert effective("memory-pressure", "box-1") == Effective(True, 95.0, 10.0)
    assert effective("memory-pressure", "box-9") == Effective(True, 80.0, 300.0)
    assert effective("source-down", "box-2").enabled is False and effective("source-down", "box-3").enabled
