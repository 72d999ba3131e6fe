"""`python -m diface`: a short tour on the finite-difference backend (no framework needed)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from ._tour import tour

    args = sys.argv[1:] if argv is None else argv
    if args:
        print(f"usage: python -m diface   (got unexpected arguments: {' '.join(args)})", file=sys.stderr)
        return 2
    tour()
    return 0


if __name__ == "__main__":
    sys.exit(main())
