"""The tape corpus report: public functions of published NumPy libraries (and in-place programs of our
own) differentiated by AutoTape in forward, reverse and automatic mode, unprepared and prepared at
another point, against Richardson-extrapolated central differences (tests/tape_corpus/).

Prints a row per library (functions counted, exact, refused, wrong, crashes, reference unstable) and
overall, the refusals by cause, and every wrong or crashed case; `--json PATH` writes every case's
outcome and runs, so that two checkouts can be diffed (`--diff OLD.json` prints what changed).

    python benchmarks/tape_corpus.py [--library NAME ...] [--case SUBSTRING] [--json PATH] [--diff OLD.json]

It measures the diface of the checkout it is in (its root goes first on sys.path), not an installed one.
A library that is not installed is listed as skipped (`pip install -c constraints.txt -e ".[corpus]"`).
CORPUS_TRACEBACKS=1 prints the traceback of every crash.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import tape_corpus as corpus  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", action="append", choices=sorted(corpus.LIBRARIES), help="only these (repeatable)")
    parser.add_argument("--case", help="only the cases whose name contains this")
    parser.add_argument("--json", type=Path, help="write every case's outcome here")
    parser.add_argument("--diff", type=Path, help="a JSON written before: print the cases whose outcome changed")
    parser.add_argument("--causes", type=int, default=12, help="refusal causes shown per library")
    args = parser.parse_args(argv)

    libraries = args.library or list(corpus.LIBRARIES)
    summaries, everything, skipped = [], [], []
    start = time.perf_counter()
    for library in libraries:
        if not corpus.available(library):
            skipped.append(library)
            continue
        cases = corpus.cases(library)
        if args.case:
            cases = [c for c in cases if args.case in c.name]
        results = corpus.run_cases(cases)
        summaries.append(corpus.summarize(library, results))
        everything += results
    print(corpus.format_table(summaries, causes=args.causes))
    if skipped:
        print(f"\nskipped (not installed): {', '.join(skipped)}")
    print(f"\noverall exact: {100 * corpus.overall_fraction(summaries):.1f}%  ({time.perf_counter() - start:.1f} s)")
    if args.json:
        payload = {"libraries": libraries, "skipped": skipped, "cases": [r.as_json() for r in everything]}
        args.json.write_text(json.dumps(payload, indent=1))
    if args.diff:
        old = {(c["library"], c["name"]): c for c in json.loads(args.diff.read_text())["cases"]}
        changed = [
            (r, old.get((r.library, r.name)))
            for r in everything
            if (o := old.get((r.library, r.name))) is None or o["outcome"] != r.outcome
        ]
        print(f"\nchanged since {args.diff}: {len(changed)}")
        for r, o in changed:
            print(f"  {r.library}.{r.name}: {o['outcome'] if o else 'new'} -> {r.outcome}  {r.detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
