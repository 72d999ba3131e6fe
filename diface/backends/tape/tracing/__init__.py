"""Layer 4 of the tape: the traced array NumPy dispatches to (`tracer`), with its Python operators and
methods (`array_methods`)."""
