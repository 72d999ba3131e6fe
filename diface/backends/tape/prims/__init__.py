"""Layer 2 of the tape: the primitives, each with its rules where it is defined (see `prim.Prim`): JVP,
VJP, Taylor (the series recurrences in `series`) and sparsity."""
