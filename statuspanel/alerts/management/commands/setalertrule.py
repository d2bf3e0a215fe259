"""`manage.py setalertrule RULE [--engine E] [--threshold X] [--for SECS] [--enable|--disable] [--default]`:
a rule's setting (or one engine's override), validated by the admin's own form."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from statuspanel.alerts import specs
from statuspanel.alerts.forms import RuleOverrideForm, RuleSettingForm, form_errors
from statuspanel.alerts.models import RuleOverride, RuleSetting


class Command(BaseCommand):
    help = "Set an alert rule's threshold, `for` duration or switch (per engine with --engine)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("rule", help=", ".join(specs.RULES))
        parser.add_argument("--engine", default="")
        parser.add_argument("--threshold", type=float)
        parser.add_argument("--for", dest="for_secs", type=float, metavar="SECS")
        switch = parser.add_mutually_exclusive_group()
        switch.add_argument("--enable", action="store_true")
        switch.add_argument("--disable", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        rule, engine = opts["rule"], opts["engine"]
        if rule not in specs.RULES:
            raise CommandError(f"unknown rule {rule!r}; rules: {', '.join(specs.RULES)}")
        model, form_class = (RuleOverride, RuleOverrideForm) if engine else (RuleSetting, RuleSettingForm)
        lookup = {"rule": rule, "engine": engine} if engine else {"rule": rule}
        instance = model.objects.filter(**lookup).first()
        data = {"rule": rule, "engine": engine}
        for field in ("threshold", "for_secs"):
            value = opts[field] if opts[field] is not None else getattr(instance, field, None)
            data[field] = "" if value is None else repr(value)
        enabled = getattr(instance, "enabled", None if engine else True)
        enabled = True if opts["enable"] else False if opts["disable"] else enabled
        data["enabled"] = "" if enabled is None else ("true" if enabled else "false")
        form = form_class(data=data, instance=instance)
        if not form.is_valid():
            raise CommandError("setting not saved:\n" + form_errors(form))
        row = form.save()
        where = f" for engine {engine}" if engine else ""
        self.stdout.write(f"{rule}{where}: enabled={row.enabled} threshold={row.threshold} for={row.for_secs}")
