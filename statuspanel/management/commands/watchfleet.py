"""`manage.py watchfleet [--bind HOST:PORT]`: a dashboard-only host. It serves the panel and the API
(servepanel's serving path) and runs the fleet collector beside them, and proves nothing (no
engine, no GPU needed). SIGINT/SIGTERM stop it."""
from __future__ import annotations

from statuspanel.management.commands.servepanel import Command as ServePanel
from statuspanel.models import Source


class Command(ServePanel):
    help = "Serve the status panel for a fleet of remote engines (sources), without an engine of its own."
    banner_title = "vastmanager watchfleet"
    collects_fleet = True

    def banner_lines(self) -> list[str]:
        enabled = Source.objects.filter(enabled=True).count()
        return [f"  sources    {enabled} enabled (manage.py addsource / listsources)"]
