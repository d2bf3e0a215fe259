"""The evaluator of this serving process (`runprover` serving, `servepanel`, `watchfleet`): started
once the web server listens, stopped (its lease released) when it stops. Every serving process
starts one; the lease lets exactly one of them evaluate (statuspanel/alerts/lease.py)."""
from __future__ import annotations

import logging

from django.conf import settings

from statuspanel.alerts.delivery import Dispatcher
from statuspanel.alerts.evaluator import Evaluator

log = logging.getLogger(__name__)
_current: Evaluator | None = None


def start_evaluator() -> Evaluator | None:
    """Start this process's evaluator (None when ALERTS_ENABLED is off)."""
    global _current
    if not getattr(settings, "ALERTS_ENABLED", True) or _current is not None:
        return _current
    _current = Evaluator(dispatcher=Dispatcher()).start()
    return _current


def stop_evaluator() -> None:
    global _current
    evaluator, _current = _current, None
    if evaluator is not None:
        evaluator.stop()


def current_evaluator() -> Evaluator | None:
    return _current
