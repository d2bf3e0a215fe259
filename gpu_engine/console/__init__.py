"""What the management commands share: argument types, progress lines, the demo job stream."""
