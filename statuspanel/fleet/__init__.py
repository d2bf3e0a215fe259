"""The fleet: remote engines (cuzk daemons and other vastmanager engines) shown beside local ones.

Modules: `collector` (FleetCollector: the asyncio poller inside the serving process), `poller`
(one source's state, backoff and snapshot), `transport` (HTTP(S) and SSH direct-tcpip via httpx),
`errors` (why a poll failed), `shape` + `cuzk` (reading a foreign status document: one rule set,
malformed fields named), `sources` (the Source table as the collector reads it), `forms` (the
rule set of a Source, shared by the admin and the commands), `vocabulary` (the fleet's words).
`GET /api/fleet` is `statuspanel.api.fleet`.
The design and the states are documented in docs/FLEET.md.
"""
