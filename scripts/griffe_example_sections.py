"""A griffe extension for the API reference (mkdocs.yml): a docstring's `Example:` section is an examples section.

diface's docstrings head their doctests `Example:`, as the Google style guide does; griffe's Google parser
knows only `Examples:` and renders `Example:` as an admonition whose `>>>` lines become nested block
quotes. This renames the heading of every docstring griffe loads (before it is parsed), so the doctests
render as highlighted Python sessions. The source is not changed: `Examples:` works as well.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

#: an `Example:` heading alone on its line, at any indentation
EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
