"""The console says what the API, the admin and the panel say: a cancelled job is "cancelled", not
"FAILED", and the running totals and the closing line count it apart."""
from __future__ import annotations

import io

from gpu_engine.console.cli import ProgressPrinter
from gpu_engine.engine.state import JobEvent
from gpu_engine.engine.stats import EngineStats


def _print(events: list[JobEvent]) -> list[str]:
    stats, out = EngineStats(), io.StringIO()
    printer = ProgressPrinter(stats, out)
    for event in events:
        stats.record_job(event)
        printer(event)
    return out.getvalue().splitlines()


def test_a_cancelled_job_is_printed_and_counted_as_cancelled():
    lines = _print([JobEvent("j-done", "porep-c2", True, 1.0),
                    JobEvent("j-cancel", "porep-c2", False, 0.5, "cancelled by the operator", cancelled=True),
                    JobEvent("j-fail", "window-post", False, 0.2, "partition 0 failed 3 time(s)")])
    done, cancel, _reason, fail, _why = lines
    assert " done " in done and "done 1 failed 0 |" in done
    assert " cancelled " in cancel and "FAILED" not in cancel and "done 1 failed 0 cancelled 1 |" in cancel
    assert " FAILED " in fail and "done 1 failed 1 cancelled 1 |" in fail


def test_outcomes_use_the_job_status_words():
    assert [JobEvent("a", "k", True, 0).outcome, JobEvent("b", "k", False, 0).outcome,
            JobEvent("c", "k", False, 0, cancelled=True).outcome] == ["done", "failed", "cancelled"]
    stats = EngineStats()
    stats.record_job(JobEvent("c", "porep-c2", False, 0, cancelled=True))
    assert (sum(stats.failed_by_kind.values()), stats.cancelled_by_kind["porep-c2"]) == (0, 1)
