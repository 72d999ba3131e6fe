"""The machinery of `AutoJAX` (see `diface/backends/jax.py`), one job per module:

- `_ops`: JAX arrays as the core sees them (`JaxOps`);
- `_transforms`: traceable building blocks (jvp/vjp batches, basis sweeps, seeds);
- `_compile`: whole programs compiled per preparation, the direct path for x alone;
- `_linearize`: `jax.linearize` compiled once, applied to batches;
- `_nest`: second order, two modes nested in one computation;
- `_taylor`: Taylor coefficients and forward Laplacians as traceable programs;
- `_sparse`: `AutoSparse(AutoJAX())` Jacobians and Hessians as one compiled program each;
- `_sparsity` with `_sparsity_rules`: global sparsity detection, a jaxpr interpreted on index sets;
- `_trees`: JAX's pytrees as diface's trees;
- `_boundary`: `DifferentiateWith` with JAX outside (`jax.custom_jvp` over `jax.pure_callback`).

Nothing here imports jax at module import: jax is imported inside functions, on first use.
"""
