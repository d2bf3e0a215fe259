"""Dates and times as the panel writes them: ISO order, to the second (the admin's job and source
pages included; Django's English default stops at the minute)."""
from __future__ import annotations

DATETIME_FORMAT = "Y-m-d H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
