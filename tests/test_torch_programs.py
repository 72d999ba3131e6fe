"""AutoTorch on torch programs that update clones and fresh buffers in place (issue 16).

Same-point pushforwards of a few such programs against torch.func.jvp called directly on f, each call
made several times; then random programs (`tests/torch_programs.py`) on every path, prepared at one point
and called at another (same-point preparations at theirs), each call made twice, against
`torch.func.jvp` (forward paths) and `torch.func.vjp` (reverse paths) on f. Batches run one product at a
time for even seeds and through vmap for odd ones. `scripts/torch_random_programs.py` runs hundreds and
counts."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from torch_programs import check_program, random_program  # noqa: E402

import diface as di  # noqa: E402
from diface.backends.torch import _batching as batching  # noqa: E402
from diface.backends.torch import _linearize as torch_linearize  # noqa: E402

PROGRAMS = 60
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


def force_batching(monkeypatch: pytest.MonkeyPatch, vmap: bool) -> None:
    """Every batch through vmap wherever f allows it, or one product at a time (no timing)."""
    if vmap:
        threshold = lambda trial: 2 if trial is None or trial.vmap_works() else batching.INF
    else:
        threshold = lambda trial: batching.INF
    monkeypatch.setattr(batching, "vmap_threshold", threshold)


@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_every_path_agrees_with_torch_func(monkeypatch, seed):
    force_batching(monkeypatch, vmap=seed % 2 == 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vmap's slow-fallback warnings, const folding's
        outcome = check_program(random_program(seed))
    assert outcome.ok, str(outcome)


def test_the_generator_makes_what_the_check_is_about():
    """The programs update tensors in place, some repeating an index, and have every kind of output."""
    programs = [random_program(seed) for seed in range(PROGRAMS)]
    sources = " ".join(p.source for p in programs)
    for operation in ("] += v", "] = v", "index_add_", "masked_fill_", "*= v", ".mul_(", "zeros()", "stack(", "cat("):
        assert operation in sources, operation
    assert {p.output for p in programs} == {0, 1, 2, 3}
    assert any(check_program(random_program(seed)).ambiguous for seed in range(8))
