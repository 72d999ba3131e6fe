"""The machinery of `AutoTorch` (see `diface/backends/torch.py`), one job per module, each importing
only the ones listed before it (none imports torch at module level):

- `modes`: torch's global state diface sets or shares: grad and inference mode, the forward-AD level
  and `forward_ad_lock`, Python's warning filters;
- `inputs`: what users pass in (tensors as they hold them, NumPy arrays) and the guard around every
  kernel; `ops`: `TorchOps`, the core's array operations on tensors;
- `function`: the user's `f` called on a recorded leaf, on dual tensors or as a pure function;
- `batching`: a batch of products as a loop or through vmap, decided once per preparation;
- `linearize`: how torch linearizes f at a point (`AutoTorch.prepare_linearize`);
- `second_order`: the four compositions as `SecondOrderPlan`s;
- `taylor`: Taylor coefficients by nested `torch.func.jvp`, and the exact Laplacian;
- `boundary`: `DifferentiateWith` with torch outside (`torch.autograd.Function`s);
- `sparsity`, with `sparsity_rules` and `sparsity_complex` (the rules of ATen's operations, real and
  complex): global sparsity detection, the ATen graph interpreted on index sets.
"""
