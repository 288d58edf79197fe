"""isocompute.train.adamw.AdamW against torch.optim.AdamW: the same parameters, bit for bit,
after many steps with a changing learning rate, and interchangeable state dicts."""

import subprocess
import sys

import pytest
import torch

from isocompute.train.adamw import AdamW, adamw


def _model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(7, 13), torch.nn.Tanh(), torch.nn.Linear(13, 5, bias=False))


def _train(model, opt, steps: int, seed: int) -> None:
    _train_from(model, opt, torch.Generator().manual_seed(seed), 0, steps)


@pytest.mark.parametrize("weight_decay", [0.0, 0.01, 0.1])
def test_same_parameters_and_state_as_torch(weight_decay):
    ours, theirs = _model(0), _model(0)
    a = AdamW(ours.parameters(), lr=1e-2, weight_decay=weight_decay)
    b = torch.optim.AdamW(theirs.parameters(), lr=1e-2, weight_decay=weight_decay)
    _train(ours, a, 40, seed=1)
    _train(theirs, b, 40, seed=1)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert torch.equal(p, q)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    assert sa["state"].keys() == sb["state"].keys()
    for i in sa["state"]:
        assert sa["state"][i].keys() == sb["state"][i].keys()
        for k in sa["state"][i]:
            assert sa["state"][i][k].dtype == sb["state"][i][k].dtype
            assert torch.equal(sa["state"][i][k], sb["state"][i][k])


def test_state_dicts_interchange_with_torch():
    """A run resumed across the two optimisers (either way) equals one uninterrupted run."""
    ref = _model(0)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.01)
    _train(ref, ref_opt, 30, seed=2)
    for first, second in ((torch.optim.AdamW, AdamW), (AdamW, torch.optim.AdamW)):
        m = _model(0)
        opt = first(m.parameters(), lr=1e-2, weight_decay=0.01)
        _train(m, opt, 12, seed=2)
        state = {k: v.clone() for k, v in m.state_dict().items()}, opt.state_dict()
        m2 = _model(5)
        m2.load_state_dict(state[0])
        opt2 = second(m2.parameters(), lr=3.0, weight_decay=0.01)
        opt2.load_state_dict(state[1])
        g = torch.Generator().manual_seed(2)
        for _ in range(12):  # the same data stream as the reference: skip the first 12 batches
            torch.randn(9, 7, generator=g)
        _train_from(m2, opt2, g, 12, 18)
        for p, q in zip(m2.parameters(), ref.parameters()):
            assert torch.equal(p, q), (first, second)


def _train_from(model, opt, g, start: int, steps: int) -> None:
    for step in range(start, start + steps):
        x = torch.randn(9, 7, generator=g)
        for group in opt.param_groups:
            group["lr"] = 1e-2 * (0.5 + (step % 7) / 7)  # a schedule, as the trainer sets it
        opt.zero_grad(set_to_none=True)
        loss = model(x).pow(2).mean() * (1 + step)
        if step % 5 == 3:  # a step where the last layer gets no gradient (its grad stays None)
            model[2].weight.requires_grad_(False)
            loss = model[0](x).pow(2).mean()
        loss.backward()
        model[2].weight.requires_grad_(True)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()


def test_load_rejects_a_state_of_another_shape():
    m = _model(0)
    other = torch.optim.AdamW(list(m.parameters())[:2], lr=1e-2)
    with pytest.raises(ValueError, match="does not fit"):
        AdamW(m.parameters()).load_state_dict(other.state_dict())


def test_cpu_parameters_get_this_one():
    assert isinstance(adamw(_model(0).parameters(), lr=1e-3, weight_decay=0.0), AdamW)


def test_no_dynamo_import():
    """The point of it: a step without torch._dynamo (torch.optim's first step imports it)."""
    code = ("import sys, torch\nfrom isocompute.train.adamw import AdamW\nm = torch.nn.Linear(3, 2)\n"
            "o = AdamW(m.parameters())\nm(torch.randn(4, 3)).sum().backward()\no.step()\no.zero_grad()\n"
            "torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)\n"
            "sys.exit(int('torch._dynamo' in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
