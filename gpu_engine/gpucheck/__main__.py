"""`python -m gpu_engine.gpucheck [check|wheelhouse|kernels]` (check is the default)."""
from __future__ import annotations

import sys
from typing import Callable


def main(argv: list[str]) -> int:
    command = argv[0] if argv and not argv[0].startswith("-") else "check"
    rest = argv[1:] if argv and not argv[0].startswith("-") else argv
    run: Callable[[list[str]], int]
    if command == "check":
        from gpu_engine.gpucheck.check import main as run
    elif command == "wheelhouse":
        from gpu_engine.gpucheck.wheelhouse import main as run
    elif command == "kernels":
        from gpu_engine.gpucheck.kernel_report import main as run
    else:
        print(f"gpucheck: unknown command {command!r}; use check, wheelhouse or kernels", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
