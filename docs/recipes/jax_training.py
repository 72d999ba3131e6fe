"""A JAX training step with `has_aux`: the loss, its gradient and the model's predictions in one call.

Logistic regression on two Gaussian blobs: `loss` returns `(loss, aux)` with the accuracy in `aux`;
`prepare_gradient(..., has_aux=True)` prepares (and compiles) once, and every step gets
`((loss, aux), grads)`. Parameters are a dict, the data a `di.Constant`.

    python docs/recipes/jax_training.py
"""

import time

import jax
import jax.numpy as jnp
import numpy as np

import diface as di

rng = np.random.default_rng(0)
X = jnp.asarray(np.concatenate([rng.normal(-1.0, 1.0, (200, 2)), rng.normal(1.0, 1.0, (200, 2))]), jnp.float32)
Y = jnp.asarray(np.repeat([0.0, 1.0], 200), jnp.float32)
params = {"w": jnp.zeros(2, jnp.float32), "b": jnp.zeros((), jnp.float32)}


def loss(p, data):
    x, y = data
    logits = x @ p["w"] + p["b"]
    nll = jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)
    accuracy = jnp.mean((logits > 0) == (y > 0.5))
    return nll, {"accuracy": accuracy}


start = time.perf_counter()
prep = di.prepare_gradient(loss, di.AutoJAX(), params, di.Constant((X, Y)), has_aux=True)
print(f"prepared (compiled) in {time.perf_counter() - start:.2f} s")
update = jax.jit(lambda params, grads: jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads))
update(params, params)  # compiles the update
start = time.perf_counter()
for _ in range(200):
    (value, aux), grads = prep.value_and_gradient(params, di.Constant((X, Y)))
    params = update(params, grads)
jax.block_until_ready(params)
print(
    f"200 steps in {(time.perf_counter() - start) * 1e3:.0f} ms: loss {float(value):.4f}, "
    f"accuracy {float(aux['accuracy']):.3f}, w = {np.asarray(params['w']).round(3)}"
)

# the gradient and aux are jax.grad's
grads, aux = prep.gradient(params, di.Constant((X, Y)))
want, want_aux = jax.grad(loss, has_aux=True)(params, (X, Y))
assert all(np.allclose(grads[k], want[k], rtol=1e-5, atol=1e-7) for k in params)
assert float(aux["accuracy"]) == float(want_aux["accuracy"]) >= 0.85
