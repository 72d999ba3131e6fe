"""The call path: everything between a public operator and the backend's kernel.

- `prepare`: validate a call's arguments, build the (flat) problem, ask the backend for its kernel.
- `prep`: `Prep` and the operator classes (`GradientPrep`, ...), one method per variant.
- `prepared`: what preparation made, as data (`Prepared`); `settings`: `has_aux`, `output`, options.
- `plan`: one plan per variant, fixed at preparation: accept, convert in, run, deliver (the only
  reader of the kernel's hints).
- `general`: the general path, for every call a plan does not take (`out=`, `y=`, other specs).
- `check`: one description of an argument's spec, its generated test, the strict check's report.
- `convert`: the user's arrays as the backend's; `deliver`: the kernel's results as the user gets them.
- `complex`: complex numbers as real pairs; `trees/`: trees of arrays (`registry`: flattening,
  `info`: one tree's description, `codec`: between a structured call and its flat problem).

This package imports nothing at its own import: its modules sit in two layers (see
tests/test_layers.py), the values (`check`, `convert`, `complex`, `trees`) below the engines, the rest
above them.
"""
