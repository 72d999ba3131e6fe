"""A corpus of real NumPy code for AutoTape: public functions of published scientific libraries, and
in-place programs of our own, each differentiated in forward, reverse and automatic mode, unprepared and
prepared at another point, against Richardson-extrapolated central differences (see `_harness`).

`LIBRARIES` maps a library's name to the module it needs and the module of its table;
`tests/test_tape_corpus.py` runs it, `benchmarks/tape_corpus.py` prints the report.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from ._harness import Case, CaseResult, Summary, format_table, overall_fraction, run_cases, summarize

__all__ = [
    "LIBRARIES",
    "Case",
    "CaseResult",
    "Summary",
    "available",
    "cases",
    "format_table",
    "overall_fraction",
    "run_cases",
    "run_library",
    "summarize",
]

#: library -> the table module in this package (its MODULE names what it needs installed)
LIBRARIES = {
    "seawater": "lib_seawater",
    "numpy-financial": "lib_numpy_financial",
    "ambiance": "lib_ambiance",
    "pvlib": "lib_pvlib",
    "colour": "lib_colour",
    "inplace": "lib_inplace",
}


def table(library: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{LIBRARIES[library]}")


def available(library: str) -> bool:
    module = table(library).MODULE
    return module is None or importlib.util.find_spec(module) is not None


def cases(library: str) -> list[Case]:
    return table(library).cases()


def run_library(library: str) -> tuple[Summary, list[CaseResult]]:
    results = run_cases(cases(library))
    return summarize(library, results), results
