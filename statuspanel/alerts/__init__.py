"""Alerts: the panel tells the operator instead of waiting to be looked at (docs/ALERTS.md).

Modules, one job each: `specs` (the built-in rules: names, defaults, ranges), `rules` (each rule as a
pure function over typed inputs), `facts` (what the database adds: queue, failures, claims,
heartbeats, phase p95s), `evaluator` (the lifecycle pending -> firing -> resolved), `lease` (one
evaluator per deployment), `notifiers` (webhook, Slack, email: building and sending one message),
`delivery` (grouping, retries, every attempt recorded, in threads of its own), `forms` (the one rule
set for thresholds and notifiers), `panel` (what the panel and its JSON API read and write),
`serving` (started beside the web server).
"""
