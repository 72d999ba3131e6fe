"""Packages whose functions are users' code although they ship inside a library.

An engine that looks at who calls it (the tape names the user's line in its messages, and tells a
conversion made by NumPy from one made by the user's code) treats frames of registered packages as the
user's. `diface.testing` registers itself: its scenarios are functions users could have written. The
engines never name such a package; they ask here.
"""

from __future__ import annotations

__all__ = ["is_user_code", "register_user_code"]

_PACKAGES: set[str] = set()


def register_user_code(package: str) -> None:
    """Treat the functions of `package` (a module name; its submodules too) as users' code."""
    _PACKAGES.add(package)
    _ANSWERS.clear()


def is_user_code(module: str) -> bool:
    """Whether functions of `module` (a module's `__name__`) are users' code by registration."""
    answer = _ANSWERS.get(module)
    if answer is None:
        answer = _ANSWERS[module] = any(module == p or module.startswith(p + ".") for p in _PACKAGES)
    return answer


#: module name -> whether it is users' code (the engines ask once per frame they look at)
_ANSWERS: dict[str, bool] = {}
