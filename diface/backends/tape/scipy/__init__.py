"""Layer 5 of the tape: the rules of SciPy's functions, reached through `numpy.hooks`."""
