"""AutoTorch on torch programs that update clones and fresh buffers in place (issue 16): same-point
pushforwards against torch.func.jvp called directly on f, each call made several times."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import diface as di  # noqa: E402
from diface.backends._torch import linearize as torch_linearize  # noqa: E402

D = torch.float64
AUTO = di.AutoTorch()


def _jvp(f, x, t):
    return torch.func.jvp(f, (x,), (t,))[1]


@pytest.mark.parametrize("idx", [[-3, 3, 2, 0], [0, 0, 1, -1]], ids=["distinct", "repeated"])
def test_same_point_pushforward_through_an_indexed_update_of_a_clone(idx):
    """The issue's program: `v[idx] += x` on a clone. torch's own `torch.func.linearize` folds the
    clone into a constant its replays keep adding to; each call here equals the direct JVP."""

    def f(x):
        v = x.clone()
        v[idx] += x
        return torch.sum(torch.sin(torch.stack([v, x], dim=2)))

    gen = torch.Generator().manual_seed(16)
    x, t0, t, s = (torch.randn(4, 2, dtype=D, generator=gen) for _ in range(4))
    one = di.prepare_pushforward_same_point(f, AUTO, x, t0)
    two = di.prepare_pushforward_same_point(f, AUTO, x, (t0, t0))
    for _ in range(3):
        assert torch.allclose(one.pushforward(x, t), _jvp(f, x, t), rtol=1e-12, atol=1e-12)
        got = two.pushforward(x, (t, s))
        assert torch.allclose(torch.stack(got), torch.stack([_jvp(f, x, t), _jvp(f, x, s)]), rtol=1e-12, atol=1e-12)


def test_same_point_pushforward_through_fresh_buffers_updated_in_place():
    """Buffers f makes and updates in place (`torch.zeros`, then `index_add_` and `masked_fill_` on a
    clone): constants of the trace, which its replays wrote into again without functionalization."""
    rows, mask = torch.tensor([2, 0, 2]), torch.tensor([True, False, True, False])

    def f(x):
        w = torch.zeros(4, dtype=D)
        w[[1, 1, 3]] += torch.sin(x[:3])
        v = (w * x).clone().index_add_(0, rows, x[1:], alpha=0.5)
        return torch.cat([v.masked_fill_(mask, 2.0), torch.exp(w)])

    x, t = torch.tensor([0.4, -1.1, 0.8, 0.3], dtype=D), torch.tensor([1.0, -0.5, 2.0, 0.7], dtype=D)
    prep = di.prepare_pushforward_same_point(f, AUTO, x, t)
    for _ in range(3):
        assert torch.allclose(prep.pushforward(x, t), _jvp(f, x, t), rtol=1e-12, atol=1e-12)


def test_same_point_pushforward_of_a_constant_map_returns_fresh_zeros():
    """A map whose trace returns one of its constants (f not depending on x): a caller writing into a
    result does not change the next."""
    x = torch.tensor([0.4, -1.1, 0.8], dtype=D)
    prep = di.prepare_pushforward_same_point(lambda x: torch.sin(x.detach()), AUTO, x, x)
    first = prep.pushforward(x, x)
    first += 1.0
    assert torch.equal(prep.pushforward(x, x), torch.zeros(3, dtype=D))


def test_a_trace_that_disagrees_with_a_direct_jvp_is_not_kept(monkeypatch):
    """Preparation checks the traced map against one direct JVP, twice: a trace that replays wrongly
    (here: one whose second application drifts, as torch's own did) gives way to dual tensors."""
    real = torch_linearize.trace_linear_map

    def drifting(pure, x):
        value, linear = real(pure, x)
        calls = []

        def wrong(v):
            calls.append(1)
            return linear(v) * len(calls)

        return value, wrong

    monkeypatch.setattr(torch_linearize, "trace_linear_map", drifting)
    x, t = torch.tensor([0.4, -1.1, 0.8], dtype=D), torch.tensor([1.0, -0.5, 2.0], dtype=D)
    prep = di.prepare_pushforward_same_point(torch.sin, AUTO, x, t)
    for _ in range(3):
        assert torch.allclose(prep.pushforward(x, t), torch.cos(x) * t, rtol=1e-14, atol=0)
