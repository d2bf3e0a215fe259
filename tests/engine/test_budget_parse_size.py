"""parse_size: human byte sizes for settings and flags."""
from __future__ import annotations

import pytest

from gpu_engine.budget import parse_size


@pytest.mark.parametrize("text,expected", [
    ("8GiB", 8 * 1024**3),
    ("512MiB", 512 * 1024**2),
    ("1.5GB", 1_500_000_000),
    ("4096", 4096),
    ("0", 0),
    ("64 KiB", 65536),
    ("2g", 2 * 1024**3),
    ("1TB", 10**12),
    ("100B", 100),
    (" 3 mib ", 3 * 1024**2),
    (".5KiB", 512),
    (12345, 12345),
])
def test_parses_sizes(text, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "GiB", "8 gigs", "-1GiB", "1e9", "1.2.3MB", "8GiBs", None, 2.5, -3, True])
def test_garbage_raises_value_error(bad) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)
