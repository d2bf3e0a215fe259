"""`vastmanager_alerts_firing{rule,engine,severity}` for /metrics: the firing alerts, from the database."""
from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily, Metric

from statuspanel.alerts import specs
from statuspanel.alerts.models import Alert


def alert_metrics() -> Iterator[Metric]:
    fam = GaugeMetricFamily("vastmanager_alerts_firing", "Alerts firing now, by rule, engine and severity",
                            labels=["rule", "engine", "severity"])
    rows = (Alert.objects.filter(state=specs.FIRING).values_list("rule", "engine", "severity")
            .annotate(n=Count("id")).order_by("rule", "engine", "severity"))
    for rule, engine, severity, n in rows:
        fam.add_metric([rule, engine, severity], n)
    yield fam
