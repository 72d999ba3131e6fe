"""Every AutoTorch path on random torch programs that update clones in place, against torch.func.

Runs `tests/torch_programs.py`'s generator on seeds 0..N-1 and `check_program` on each (pushforward,
pullback, same-point pushforward and pullback, batched tangents, Jacobians and gradients in both modes,
prepared at one point and called at another, each call made twice) and reports how many programs had a
path give a wrong result, and how many had a path crash (an exception other than `NotSupportedError`).
Forward paths are compared with `torch.func.jvp`, reverse paths with `torch.func.vjp`: where an index
assignment repeats an index the two modes of torch disagree, and each is what torch computes.

    python scripts/torch_random_programs.py [--programs 300] [--start 0] [--verbose]
"""

from __future__ import annotations

import argparse
import collections
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's diface, whatever is installed

from torch_programs import check_program, random_program  # noqa: E402

import diface  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="print every failing program and path")
    args = parser.parse_args()
    print(f"diface from {Path(diface.__file__).parent}")
    wrong = crashed = refused = ambiguous = 0
    paths: collections.Counter[str] = collections.Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(args.start, args.start + args.programs):
            outcome = check_program(random_program(seed))
            wrong += bool(outcome.wrong)
            crashed += bool(outcome.crashed)
            refused += bool(outcome.refused)
            ambiguous += outcome.ambiguous
            paths.update(p.split(" (")[0].split(":")[0] for p in outcome.wrong + outcome.crashed)
            if args.verbose and not outcome.ok:
                print(outcome)
    print(f"{args.programs} programs: {wrong} with a wrong path, {crashed} with a crashing path, {refused} refused")
    print(f"  ({ambiguous} repeat an index in an assignment, where torch's forward and reverse modes disagree)")
    for path, count in paths.most_common():
        print(f"  {count:4d}  {path}")
    return 1 if wrong or crashed else 0


if __name__ == "__main__":
    sys.exit(main())
