"""Internals of `AutoFiniteDiff`: the serial evaluator, and the batched evaluation of all perturbed
points of one operator call (`vectorized=True` or `executor=`)."""
