"""What each box costs and earns: busy share, proofs, cost per proof by kind, money spent on idle GPUs.

"Which boxes earn their rent" over 1 h / 24 h / 7 d. A box costs its hourly price for every hour
it was watched in the window (a fleet source: the minutes its polls observed; a local engine: the
minutes its heartbeat rolled up). Its busy share is GPU-seconds busy over GPU-seconds watched (a
GPU is busy while any of its workers proves). The money spent on idle GPU time is the cost times
(1 - busy share). Cost per proof of a kind is the cost shared out among kinds by the GPU time their
partitions took (by proof count where no partition durations are visible), divided by that kind's
proofs. A box without a price gets busy share and proofs only. One report is built per
REPORT_CACHE_SECS and shared by the fleet summary, the history page and /metrics, so all three say
the same numbers.
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured

WINDOWS = {"1h": 3600.0, "24h": 86400.0, "7d": 7 * 86400.0}
# How long each window's figures are reused: a 7-day figure reads a week of minutes and moves little in
# half an hour; the last hour's is rebuilt every 30 s.
WINDOW_CACHE_SECS = {"1h": 30.0, "24h": 300.0, "7d": 1800.0}
REPORT_CACHE_SECS = 30.0
CACHE_KEY = "vastmanager:cost-report:v2"
_window_keys: set[str] = set()   # the window keys this process cached (clear_cache forgets them)


@dataclass
class Usage:
    """What one box did in a window, before prices."""

    watched_secs: float = 0.0          # wall-clock seconds the box was observed
    gpu_secs: float = 0.0              # GPU-seconds observed
    busy_gpu_secs: float = 0.0
    proofs: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    kind_gpu_secs: Counter[str] = field(default_factory=Counter)   # partition GPU time by kind

    @property
    def busy_share(self) -> float | None:
        return self.busy_gpu_secs / self.gpu_secs if self.gpu_secs > 0 else None


def box_cost(usage: Usage, price: float | None) -> dict[str, Any]:
    """The answer for one box and window: busy share, proofs, and with a price the money."""
    share = usage.busy_share
    out: dict[str, Any] = {"watched_hours": usage.watched_secs / 3600, "busy_share": share,
                           "proofs": dict(usage.proofs), "proofs_total": sum(usage.proofs.values()),
                           "failed_total": sum(usage.failed.values()), "price_per_hour": price,
                           "spent": None, "idle_cost": None, "cost_per_proof": {}, "cost_per_proof_all": None}
    if price is None:
        return out
    spent = price * usage.watched_secs / 3600
    out["spent"] = spent
    out["idle_cost"] = spent * (1.0 - share) if share is not None else None
    total = out["proofs_total"]
    if total:
        out["cost_per_proof_all"] = spent / total
        by_gpu = all(usage.kind_gpu_secs.get(k, 0) > 0 for k in usage.proofs)
        weights = usage.kind_gpu_secs if by_gpu else usage.proofs
        weight_total = sum(weights[k] for k in usage.proofs) or 1
        out["cost_per_proof"] = {k: spent * weights[k] / weight_total / n for k, n in usage.proofs.items() if n}
    return out


# -- prices ---------------------------------------------------------------------------------------
def parse_local_prices(text: str) -> tuple[float | None, dict[str, float]]:
    """ENGINE_PRICE_PER_HOUR: "2.5" (every local engine) or "a=2.5,b=1.1" -> (default, by engine)."""
    default, by_engine = None, {}
    for item in [p.strip() for p in (text or "").split(",") if p.strip()]:
        name, _, value = item.rpartition("=")
        try:
            price = float(Decimal(value.strip()))
        except InvalidOperation:
            raise ImproperlyConfigured(f"ENGINE_PRICE_PER_HOUR: {value.strip()!r} is not a price") from None
        if price < 0:
            raise ImproperlyConfigured(f"ENGINE_PRICE_PER_HOUR: {price} is negative")
        if name:
            by_engine[name.strip()] = price
        else:
            default = price
    return default, by_engine


def currency() -> str:
    return str(getattr(settings, "PRICE_CURRENCY", "USD") or "USD")


# -- usage ----------------------------------------------------------------------------------------
def fleet_usages(names: list[str], since: float) -> dict[str, Usage]:
    """Fleet sources' usage since `since`, from their FleetMinute rows: the GPU lanes summed in the
    database (one grouped query), the engine rows' counts by kind read (one row per source and minute).
    Watched time is a source's GPU-seconds over its GPUs (exact while its GPU count holds)."""
    from django.db.models import Count, Sum

    from statuspanel.fleet.history import ENGINE_LANE
    from statuspanel.models import FleetMinute

    usages = {name: Usage() for name in names}
    recent = FleetMinute.objects.filter(source_name__in=names, minute__gte=datetime.fromtimestamp(since, timezone.utc))
    for name, observed, busy, gpus in (recent.filter(lane__startswith="gpu").order_by().values("source_name")
                                       .annotate(o=Sum("observed_secs"), b=Sum("busy_secs"),
                                                 g=Count("lane", distinct=True))
                                       .values_list("source_name", "o", "b", "g")):
        usage = usages[name]
        usage.gpu_secs, usage.busy_gpu_secs = observed or 0.0, busy or 0.0
        usage.watched_secs = usage.gpu_secs / max(gpus, 1)
    for name, completed, failed, by_kind in (recent.filter(lane=ENGINE_LANE).order_by()
                                             .values_list("source_name", "completed", "failed", "gpu_secs_by_kind")
                                             .iterator()):
        usage = usages[name]
        usage.proofs.update({k: int(v) for k, v in (completed or {}).items()})
        usage.failed.update({k: int(v) for k, v in (failed or {}).items()})
        usage.kind_gpu_secs.update({k: float(v) for k, v in (by_kind or {}).items()})
    return usages


def fleet_usage(source_name: str, since: float) -> Usage:
    return fleet_usages([source_name], since)[source_name]


def local_usage(engine_id: str, since: float, now: float) -> Usage:
    """A local engine's usage from its own history, summed in the database: the minutes its heartbeat
    rolled up (watched time), its GPUs (telemetry rows, else the workers its runs name), the GPU time
    of its partition runs (a worker proves one partition at a time: their sum is its busy time) and
    its done jobs by kind."""
    from django.db.models import Count, Sum

    from gpu_engine.models import JobStatus, PartitionRun, ProofJob, TelemetryMinute

    usage = Usage()
    start = datetime.fromtimestamp(since, timezone.utc)
    minutes = TelemetryMinute.objects.filter(engine_id=engine_id, minute__gte=start)
    usage.watched_secs = min(minutes.filter(gpu_ordinal=TelemetryMinute.ENGINE_ROW).count() * 60.0, now - since)
    runs = PartitionRun.objects.filter(engine_id=engine_id, ended_at__gte=start, gpu_ms__isnull=False).order_by()
    gpus = max(minutes.exclude(gpu_ordinal=TelemetryMinute.ENGINE_ROW).values("gpu_ordinal").distinct().count(),
               runs.exclude(worker_id="").values("worker_id").distinct().count(), 1)
    usage.gpu_secs = usage.watched_secs * gpus
    for kind, gpu_ms in runs.values("proof_kind").annotate(ms=Sum("gpu_ms")).values_list("proof_kind", "ms"):
        usage.kind_gpu_secs[kind] += (gpu_ms or 0) / 1000  # type: ignore[assignment]  # float seconds: typeshed types Counter values as int
    usage.busy_gpu_secs = min(usage.gpu_secs, sum(usage.kind_gpu_secs.values()))
    done = ProofJob.objects.filter(claimed_by=engine_id, finished_at__gte=start, status=JobStatus.DONE).order_by()
    for kind, n in done.values("proof_kind").annotate(n=Count("id")).values_list("proof_kind", "n"):
        usage.proofs[kind] += n
    return usage


# -- the report -----------------------------------------------------------------------------------
def engines_and_prices(local_engines: list[str]) -> list[tuple[str, bool, float | None]]:
    """(engine, is a fleet source, hourly price or None) for every source and every live local engine."""
    from statuspanel.models import Source

    default, by_engine = parse_local_prices(getattr(settings, "ENGINE_PRICE_PER_HOUR", ""))
    out = [(name, True, float(price) if price is not None else None)
           for name, price in Source.objects.order_by("name").values_list("name", "price_per_hour")]
    sources = {name for name, _, _ in out}
    out += [(e, False, by_engine.get(e, default)) for e in sorted(set(local_engines) - sources)]
    return out


def _window_usages(window: str, engines: list[tuple[str, bool, float | None]], now: float,
                   cached: bool) -> dict[str, Usage]:
    """Every engine's usage over one window, reused for WINDOW_CACHE_SECS when `cached`."""
    key = f"{CACHE_KEY}:{window}:{','.join(e for e, _, _ in engines)}"
    usages = cache.get(key) if cached else None
    if usages is None:
        since = now - WINDOWS[window]
        usages = fleet_usages([e for e, is_source, _ in engines if is_source], since)
        usages.update({e: local_usage(e, since, now) for e, is_source, _ in engines if not is_source})
        if cached:
            cache.set(key, usages, WINDOW_CACHE_SECS[window])
            _window_keys.add(key)
    return usages


def clear_cache() -> None:
    """Forget every cached figure (tests; a price edit shows within REPORT_CACHE_SECS anyway)."""
    cache.delete(CACHE_KEY)
    cache.delete_many(list(_window_keys))
    _window_keys.clear()


def build_report(local_engines: list[str], now: float | None = None, cached: bool = False) -> dict[str, Any]:
    """{"currency", "windows", "boxes": {engine: {window: box_cost}}, "fleet": {window: totals}}."""
    now = time.time() if now is None else now
    boxes: dict[str, dict[str, Any]] = {}
    fleet: dict[str, Any] = {}
    engines = engines_and_prices(local_engines)
    for window in WINDOWS:
        total = Usage()
        priced_spent = priced_idle = 0.0
        priced_proofs: Counter[str] = Counter()
        priced_weighted: defaultdict[str, float] = defaultdict(float)
        any_price = False
        usages = _window_usages(window, engines, now, cached)
        for engine, is_source, price in engines:
            usage = usages[engine]
            answer = box_cost(usage, price)
            answer["is_source"] = is_source
            boxes.setdefault(engine, {})[window] = answer
            total.gpu_secs += usage.gpu_secs
            total.busy_gpu_secs += usage.busy_gpu_secs
            total.proofs.update(usage.proofs)
            if price is not None:
                any_price = True
                priced_spent += answer["spent"] or 0.0
                priced_idle += answer["idle_cost"] or 0.0
                priced_proofs.update(usage.proofs)
                for kind, per in answer["cost_per_proof"].items():
                    priced_weighted[kind] += per * usage.proofs[kind]
        fleet[window] = {"busy_share": total.busy_share, "proofs": dict(total.proofs),
                         "proofs_total": sum(total.proofs.values()),
                         "spent": priced_spent if any_price else None, "idle_cost": priced_idle if any_price else None,
                         "cost_per_proof": {k: priced_weighted[k] / n for k, n in priced_proofs.items() if n}}
    return {"currency": currency(), "windows": list(WINDOWS), "boxes": boxes, "fleet": fleet, "at": now}


def report(local_engines: list[str] | None = None) -> dict[str, Any]:
    """The report, built at most once per REPORT_CACHE_SECS (the summary, history page and /metrics share it)."""
    cached = cache.get(CACHE_KEY)
    if cached is not None:
        return cast("dict[str, Any]", cached)  # only report() stores under CACHE_KEY
    if local_engines is None:
        from gpu_engine import wire

        local_engines = [str(s.get("engine_id")) for s in wire.latest_snapshots()[0]
                         if not isinstance(s.get("source"), dict) and s.get("engine_id")]
    built = build_report(local_engines, cached=True)
    cache.set(CACHE_KEY, built, REPORT_CACHE_SECS)
    return built
