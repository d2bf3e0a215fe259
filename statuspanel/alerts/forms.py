"""The one rule set for alert settings and notifiers, used by the admin and the commands alike.

`RuleSettingForm` / `RuleOverrideForm` check thresholds and `for` durations against the ranges of
specs.RULES. `NotifierForm` checks a notifier: a webhook or Slack notifier has an http(s) URL with a
host and no credentials, an email notifier has valid addresses and no URL. The URL (it may carry a
token) and the HMAC secret are write-only: never rendered back, kept when left empty on an edit.
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

from statuspanel.alerts import specs
from statuspanel.alerts.models import EMAIL, NOTIFIER_KINDS, SLACK, Notifier, RuleOverride, RuleSetting

# The stubs' generic ModelForm, which Django's own class is not at run time.
if TYPE_CHECKING:
    _RuleModelForm = forms.ModelForm[Any]  # a rule setting or a rule override
    _NotifierModelForm = forms.ModelForm[Notifier]
else:
    _RuleModelForm = _NotifierModelForm = forms.ModelForm

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MIN_SECRET_CHARS = 16
MAX_RECIPIENTS = 50


def check_threshold(rule: str, value: float | None) -> str | None:
    """Why `value` is no threshold for `rule`, or None (None values mean the default)."""
    spec = specs.RULES.get(rule)
    if spec is None:
        return f"unknown rule {rule!r}; rules: {', '.join(specs.RULES)}"
    if value is None:
        return None
    if spec.threshold_max == spec.threshold_min == 0:
        return f"{rule} has no threshold (set its `for` duration instead)"
    if not math.isfinite(value) or not spec.threshold_min <= value <= spec.threshold_max:
        return (f"threshold of {rule} must be from {_n(spec.threshold_min)} to {_n(spec.threshold_max)} "
                f"({spec.unit}), got {value!r}")
    return None


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def check_for_secs(value: float | None) -> str | None:
    if value is None:
        return None
    if not math.isfinite(value) or not 0 <= value <= specs.MAX_FOR_SECS:
        return f"`for` must be from 0 to {specs.MAX_FOR_SECS:.0f} seconds, got {value!r}"
    return None


class _RuleFields(_RuleModelForm):
    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        rule = data.get("rule") or getattr(self.instance, "rule", None)
        if rule is not None:
            problem = check_threshold(rule, data.get("threshold"))
            if problem:
                self.add_error("threshold" if rule in specs.RULES else "rule", problem)
        problem = check_for_secs(data.get("for_secs"))
        if problem:
            self.add_error("for_secs", problem)
        return data


class RuleSettingForm(_RuleFields):
    class Meta:
        model = RuleSetting
        fields = ("rule", "enabled", "threshold", "for_secs")


class RuleOverrideForm(_RuleFields):
    class Meta:
        model = RuleOverride
        fields = ("rule", "engine", "enabled", "threshold", "for_secs")

    def clean_engine(self) -> str:
        engine = (self.cleaned_data.get("engine") or "").strip()
        if not engine or len(engine) > 128 or any(c.isspace() or not c.isprintable() for c in engine):
            raise ValidationError("engine must be an engine id (1-128 printable characters, no spaces), "
                                  f"got {engine!r}")
        return engine

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        spec = specs.RULES.get(data.get("rule") or "")
        if spec is not None and not spec.per_engine:
            self.add_error("rule", f"{spec.name} is about the shared queue: it has no per-engine overrides")
        return data


class NotifierForm(_NotifierModelForm):
    url = forms.CharField(required=False, strip=True, max_length=1000, widget=forms.PasswordInput(render_value=False),
                          help_text="webhook / Slack: where to POST; write-only (empty on an edit keeps it)")
    secret = forms.CharField(required=False, strip=True, max_length=500, widget=forms.PasswordInput(render_value=False),
                             help_text="webhook: HMAC-SHA256 key; write-only (empty on an edit keeps it)")
    clear_secret = forms.BooleanField(required=False, help_text="remove the stored secret")
    recipients = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                 help_text="email: addresses, one a line or comma-separated")

    class Meta:
        model = Notifier
        fields = ("name", "kind", "url", "secret", "recipients", "enabled")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial["url"] = ""
        self.initial["secret"] = ""
        if self.instance.pk is not None:
            self.initial["recipients"] = "\n".join(self.instance.recipients or [])

    def clean_name(self) -> str:
        name = (self.cleaned_data.get("name") or "").strip()
        if not NAME_RE.match(name):
            raise ValidationError(f"name: 1-64 letters, digits and . _ -, got {name!r}")
        return name

    def clean_recipients(self) -> list[str]:
        raw = self.cleaned_data.get("recipients") or ""
        if isinstance(raw, list):
            raw = "\n".join(raw)
        addresses = [a.strip() for a in re.split(r"[,\n]", raw) if a.strip()]
        check = EmailValidator()
        bad = []
        for address in addresses:
            try:
                check(address)
            except ValidationError:
                bad.append(address)
        if bad:
            raise ValidationError(f"not an email address: {', '.join(repr(b) for b in bad)}")
        if len(addresses) > MAX_RECIPIENTS:
            raise ValidationError(f"at most {MAX_RECIPIENTS} recipients")
        return list(dict.fromkeys(addresses))

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        kind = data.get("kind")
        editing = self.instance.pk is not None
        if not data.get("url") and editing and kind == self.instance.kind:
            data["url"] = self.instance.url  # write-only: an empty field keeps it
        if data.get("clear_secret"):
            data["secret"] = ""
        elif not data.get("secret") and editing:
            data["secret"] = self.instance.secret
        if kind not in NOTIFIER_KINDS:
            return data
        if kind == EMAIL:
            if data.get("url"):
                self.add_error("url", "an email notifier has no URL: give its recipients")
            if data.get("secret"):
                self.add_error("secret", "an email notifier has no secret (SMTP settings come from the environment)")
            if not data.get("recipients") and "recipients" not in self.errors:
                self.add_error("recipients", "an email notifier needs at least one recipient")
            return data
        if data.get("recipients"):
            self.add_error("recipients", f"a {kind} notifier has no recipients (it posts to its URL)")
        problem = url_problem(data.get("url") or "")
        if problem:
            self.add_error("url", problem)
        secret = data.get("secret") or ""
        if secret and kind == SLACK:
            self.add_error("secret", "a Slack notifier has no secret (its URL is the credential)")
        elif secret and (len(secret) < MIN_SECRET_CHARS or any(c.isspace() or not c.isprintable() for c in secret)):
            self.add_error("secret", f"a secret is at least {MIN_SECRET_CHARS} printable characters without spaces")
        return data

    def save(self, commit: bool = True) -> Notifier:
        notifier = super().save(commit=False)
        notifier.url = self.cleaned_data.get("url") or ""
        notifier.secret = self.cleaned_data.get("secret") or ""
        notifier.recipients = self.cleaned_data.get("recipients") or []
        if commit:
            notifier.save()
        return notifier


def url_problem(url: str) -> str | None:
    """Why `url` cannot be posted to, or None; never repeats the URL (it may carry a token)."""
    if not url:
        return "a webhook or Slack notifier needs a URL such as https://hooks.example.com/…"
    if any(c.isspace() or not c.isprintable() for c in url):
        return "the URL must not contain spaces or control characters"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"not a URL: {exc}"
    if parts.scheme not in ("http", "https"):
        got = f"{parts.scheme}:" if parts.scheme else "none"
        return f"the URL must start with http:// or https:// (got scheme {got})"
    if not parts.hostname:
        return "the URL has no host"
    if parts.username is not None or parts.password is not None:
        return "no credentials in the URL's host part: use the secret field (webhook) or a token in the path"
    if port == 0:
        return "the URL's port must be from 1 to 65535"
    return None


def form_errors(form: forms.BaseForm) -> str:
    lines = []
    for field_name, errors in form.errors.items():
        for message in errors:
            lines.append(str(message) if field_name == "__all__" else f"{field_name}: {message}")
    return "\n".join(lines)
