"""Internals of `AutoFiniteDiff`: the serial evaluator, and the batched evaluation of all perturbed
points of one operator call (`vectorized=True` or `executor=`).

Modules: `_evaluator` (f at one perturbed point at a time, with per-thread scratch), `_batched` (every
point of one call evaluated together), `_mappers` (the executors of `executor=`), `_taylor` (Taylor
coefficients and Laplacians by central differences with Richardson extrapolation)."""
