"""The fleet's words: a source's states, why it failed, its kinds and transports, and the keys of the
`source` object the collector adds to a fleet engine's snapshot (docs/FLEET.md). Defined once here."""
from __future__ import annotations

SOURCE_ONLINE = "online"            # the last poll answered a valid snapshot
SOURCE_STALE = "stale"              # no good snapshot for 2 intervals, no failure classified yet
SOURCE_UNREACHABLE = "unreachable"  # the last poll failed: refused, timeout, DNS, TLS, 401/403, ...
SOURCE_MALFORMED = "malformed"      # the last poll answered something that is no valid snapshot
SOURCE_STATES = (SOURCE_ONLINE, SOURCE_STALE, SOURCE_UNREACHABLE, SOURCE_MALFORMED)
# States in which the source counts as failing (fleet summary, metrics' source_up = 0).
SOURCE_DOWN_STATES = frozenset({SOURCE_UNREACHABLE, SOURCE_MALFORMED})
# A source is stale once its last good snapshot is older than this many poll intervals.
STALE_INTERVALS = 2
# Why a source is unreachable or malformed (`source.reason`); `source.error` says it in words.
# `grpc`: a gRPC status other than those above (UNIMPLEMENTED: the port serves no cuzk status);
# `not-protobuf`: a gRPC answer that does not decode as the message asked for.
UNREACHABLE_REASONS = ("refused", "timeout", "dns", "tls", "unauthorized", "forbidden", "http", "ssh", "network",
                       "blocked", "grpc")
MALFORMED_REASONS = ("not-json", "too-large", "too-deep", "shape", "not-protobuf")
SOURCE_KINDS = ("cuzk", "vastmanager")
SOURCE_TRANSPORTS = ("http", "ssh")
SOURCE_KEYS = ("kind", "transport", "state", "error", "last_ok_secs_ago", "poll_ms")
# The reason of a kept state change that stands for many: a flapping source's changes beyond the
# per-window burst, counted in one row (statuspanel/fleet/events.py).
EVENT_FLAPPING = "flapping"
