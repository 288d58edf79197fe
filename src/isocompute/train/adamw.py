"""AdamW without `torch.optim`: the same update, bit for bit, on the CPU.

`torch.optim`'s optimisers import `torch._dynamo` on their first `zero_grad` or
`step` (their `@torch._disable_dynamo` and `_use_grad_for_differentiable`
wrappers): ~1.2 s and ~800 modules at every job's start, for a model whose whole
update takes milliseconds. `AdamW` here runs the arithmetic of torch's
single-tensor AdamW (`torch.optim.adam._single_tensor_adam` with
`decoupled_weight_decay`, the path torch itself takes for CPU tensors: no foreach
or fused kernel there), the same operations in the same order on the same
state, so parameters after any number of steps equal torch's exactly
(tests/train/test_adamw.py compares). Its `state_dict` has torch's layout, so a
checkpoint written by one loads into the other.

`adamw(params, ...)` returns this one for CPU parameters and torch's elsewhere
(on a GPU torch takes its foreach path, which this does not reproduce).
"""

from __future__ import annotations

import torch

# torch 2.13's AdamW param_group keys besides lr, betas, eps and weight_decay (state_dict layout).
_TORCH_GROUP_FLAGS = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                      "differentiable": False, "fused": None, "decoupled_weight_decay": True}


class AdamW:
    """torch.optim.AdamW(params, lr, betas, eps, weight_decay) on CPU tensors, one param group."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2):
        self.params = list(params)
        self.param_groups = [{"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                              **_TORCH_GROUP_FLAGS, "params": self.params}]
        self.state: dict[int, dict[str, torch.Tensor]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_().requires_grad_(False).zero_()

    @torch.no_grad()
    def step(self) -> None:
        group = self.param_groups[0]
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for i, param in enumerate(self.params):
            grad = param.grad
            if grad is None:
                continue
            if grad.is_sparse or param.is_complex():
                raise ValueError("isocompute.train.adamw: sparse or complex parameters are not supported")
            state = self.state.get(i)
            if state is None:
                state = self.state[i] = {
                    "step": torch.tensor(0.0, dtype=torch.get_default_dtype()),
                    "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format)}
            step_t, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
            step_t += 1
            if wd != 0:
                param.mul_(1 - lr * wd)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step = step_t.item()
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            denom = (exp_avg_sq.sqrt() / bias_correction2 ** 0.5).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)

    def state_dict(self) -> dict:
        groups = [{**{k: v for k, v in g.items() if k != "params"}, "params": list(range(len(self.params)))}
                  for g in self.param_groups]
        return {"state": {i: dict(s) for i, s in self.state.items()}, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(self.params):
            raise ValueError(f"isocompute.train.adamw: a state of {len(groups)} group(s) and "
                             f"{sum(len(g['params']) for g in groups)} parameters does not fit one group of "
                             f"{len(self.params)}")
        flags = {k: groups[0].get(k, v) for k, v in _TORCH_GROUP_FLAGS.items()}
        if flags != _TORCH_GROUP_FLAGS:
            raise ValueError(f"isocompute.train.adamw: unsupported optimiser flags {flags}")
        self.param_groups[0].update({k: v for k, v in groups[0].items() if k != "params"})
        self.param_groups[0]["betas"] = tuple(self.param_groups[0]["betas"])
        self.state = {}
        for i, s in state_dict["state"].items():
            param = self.params[int(i)]
            # As torch: the step stays a float CPU tensor, moments take the parameter's dtype and device.
            self.state[int(i)] = {"step": s["step"].detach().clone().to(torch.get_default_dtype()),
                                  "exp_avg": s["exp_avg"].detach().to(param.device, param.dtype, copy=True),
                                  "exp_avg_sq": s["exp_avg_sq"].detach().to(param.device, param.dtype, copy=True)}


def adamw(params, lr: float, weight_decay: float, betas=(0.9, 0.999), eps: float = 1e-8):
    """An AdamW for `params`: this module's on the CPU (no torch._dynamo import), torch's elsewhere."""
    params = list(params)
    if all(p.device.type == "cpu" and not p.is_complex() for p in params):
        return AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    return torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
