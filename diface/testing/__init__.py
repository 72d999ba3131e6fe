"""The test kit: scenarios with reference results, and the functions that check backends against them.

>>> from diface.testing import default_scenarios
>>> [s.name for s in default_scenarios()][:3]
['scalar to scalar', 'scalar to vector', 'vector to scalar']

Modules: `_kit` (`test_differentiation` and `benchmark_differentiation`, the two entry points),
`_check` (one backend on one scenario and operator, every variant, each call twice), `_calls` (how an
operator is called), `_scenarios` with `_reference` (functions with analytic derivatives),
`_tree_scenarios`, `_complex`, `_complex_scenarios`, `_layouts` (layouts and edge shapes) and
`_structural` (the structural conformance database) (more scenarios), `_compositions` (the composition
matrix), `_agreement` (`check_agreement`: the engines against each other), `_threads` (the thread
check), `_deviations` (engine limits the kit knows), `_bench` with `_references`, `_timing` and
`_memory` (speed and memory against the engines called directly).
"""

from .._engines import Engine, engine_of, engines, namespace_of, register_engine
from .._user_code import register_user_code
from ._agreement import Agreement, AgreementRow, check_agreement
from ._check import Failure, check_operator, check_refusal, tolerances
from ._complex import complex_intermediate_scenarios
from ._complex_scenarios import ComplexScenario, complex_scenarios
from ._compositions import COMPOSITIONS, Cell, Outcome, check_cell, composition_cells, run_compositions
from ._deviations import known_deviation, known_unsupported, register_deviation, register_unsupported
from ._kit import Report, Row, all_scenarios, benchmark_differentiation, test_differentiation
from ._layouts import LAYOUTS, Layout, edge_scenarios, layout_scenarios
from ._scenarios import Refusal, Scenario, default_scenarios
from ._structural import structural_scenarios
from ._threads import check_threads
from ._tree_scenarios import TreeScenario, check_tree_operator, tree_scenarios

# the kit's scenario functions are functions a user could have written: engines that look at their callers
# (the tape's messages and conversions) treat them as the user's code
register_user_code(__name__)

# pytest collects test_* functions from modules it imports: this one is the kit's entry point, not a test
test_differentiation.__test__ = False  # type: ignore[attr-defined]

__all__ = [
    "COMPOSITIONS",
    "Agreement",
    "AgreementRow",
    "LAYOUTS",
    "Cell",
    "ComplexScenario",
    "Engine",
    "Failure",
    "Layout",
    "Outcome",
    "Refusal",
    "Report",
    "Row",
    "Scenario",
    "TreeScenario",
    "all_scenarios",
    "benchmark_differentiation",
    "check_agreement",
    "check_cell",
    "check_operator",
    "check_refusal",
    "check_threads",
    "check_tree_operator",
    "complex_intermediate_scenarios",
    "complex_scenarios",
    "composition_cells",
    "default_scenarios",
    "edge_scenarios",
    "engine_of",
    "engines",
    "known_deviation",
    "known_unsupported",
    "layout_scenarios",
    "namespace_of",
    "register_deviation",
    "register_engine",
    "register_unsupported",
    "run_compositions",
    "structural_scenarios",
    "test_differentiation",
    "tree_scenarios",
    "tolerances",
]
