"""Snapshot -> what the panel shows: engine sections (`engine`), fleet additions (`fleet`), the render
cache (`cache`) and the one numeric reader (`numbers`)."""
