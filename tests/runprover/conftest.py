"""The `manage.py` command tests: real processes on a throwaway site (own data dir and SQLite file)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.runprover.helpers import Site


@pytest.fixture
def site(tmp_path: Path, params_dir: Path) -> Site:
    """A migrated site in this test's directory, over the session's shared parameters (generated once).

    Modules that need parameters of their own (nothing generated yet) override this fixture."""
    return Site(tmp_path, params_dir)
