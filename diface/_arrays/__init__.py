"""Array namespaces: the few array operations the core needs, per array library.

The core never imports a framework. NumPy is built in; every other library registers an `ArrayOps`
subclass with `register_array_ops(framework, cls)` from its backend file (most write theirs over the
library's namespace module: `NamespaceOps`, `StandardNamespaceOps`), and that class is only
instantiated (and only asked about an array) once `framework` is already in `sys.modules` — as in
einops, an array can only come from a framework that is already imported. Objects implementing the
Python array API standard (`__array_namespace__`) get a generic namespace.

Modules: `_base` (`ArrayOps`, the operations every library provides), `_numpy` (NumPy's, built in),
`_namespace` (`NamespaceOps`, `StandardNamespaceOps`: the method bodies written once over a library's
namespace module), `_array_api` (the generic one, for any array-API namespace), `_registry` (which
`ArrayOps` owns an array, and the registration of frameworks' own).
"""

from __future__ import annotations

from ._array_api import ArrayAPIOps
from ._base import ArrayOps
from ._namespace import NamespaceOps, StandardNamespaceOps
from ._numpy import NumpyOps
from ._registry import NUMPY, framework_ops, ops_for, register_array_ops, reshaped

__all__ = [
    "NUMPY",
    "ArrayAPIOps",
    "ArrayOps",
    "NamespaceOps",
    "NumpyOps",
    "StandardNamespaceOps",
    "framework_ops",
    "ops_for",
    "register_array_ops",
    "reshaped",
]
