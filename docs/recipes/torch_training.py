"""A PyTorch training loop with dict parameters: one preparation, a gradient per step.

A small MLP fits a noisy sine. The parameters are a dict of tensors (what
`torch.func.functional_call` takes for an `nn.Module`); each mini-batch is a `di.Constant`, so one
preparation serves every batch. The gradient is a dict like the parameters.

    python docs/recipes/torch_training.py
"""

import itertools
import time

import torch

import diface as di

torch.manual_seed(0)
X = torch.linspace(-3.0, 3.0, 512).reshape(-1, 1)
Y = torch.sin(X) + 0.05 * torch.randn_like(X)
widths = [1, 32, 32, 1]
params = {}
for i, (a, b) in enumerate(itertools.pairwise(widths)):
    params[f"layer{i}.weight"] = torch.randn(b, a) / a**0.5
    params[f"layer{i}.bias"] = torch.zeros(b)


def loss(p, batch):
    x, y = batch
    for i in range(len(widths) - 1):
        x = x @ p[f"layer{i}.weight"].T + p[f"layer{i}.bias"]
        if i < len(widths) - 2:
            x = torch.tanh(x)
    return torch.mean((x - y) ** 2)


batches = [(X[i::8], Y[i::8]) for i in range(8)]
prep = di.prepare_gradient(loss, di.AutoTorch(), params, di.Constant(batches[0]))
start = time.perf_counter()
first = None
for _ in range(300):
    for batch in batches:
        value, grads = prep.value_and_gradient(params, di.Constant(batch))
        params = {k: params[k] - 0.05 * grads[k] for k in params}  # SGD
    first = value.item() if first is None else first
final = loss(params, (X, Y)).item()
print(
    f"MLP {widths}, {sum(v.numel() for v in params.values())} parameters, 300 epochs of 8 batches: "
    f"{time.perf_counter() - start:.2f} s"
)
print(f"loss: {first:.4f} after the first epoch, {final:.4f} at the end")

# the same gradient as torch's own, for any batch of the prepared shapes
batch = (X[::8], Y[::8])
ours, reference = prep.gradient(params, di.Constant(batch)), torch.func.grad(loss)(params, batch)
assert all(torch.allclose(ours[k], reference[k], rtol=1e-5, atol=1e-7) for k in params)  # float32
assert final < 0.01
