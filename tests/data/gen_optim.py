#!/usr/bin/python3
"""Reference parameter trajectories of torch.optim's SGD, Adam, AdamW, RMSprop and Adagrad.

Writes tests/data/optim_reference.json for tests/optim/optimizer_reference_test.cpp. Each case runs
one optimizer for STEPS steps on fixed float64 parameters with fixed gradients set by hand (no
autograd), and records every parameter after every step. Options use Kiln's names (PyTorch's,
with betas split into beta1/beta2). Regenerate with /usr/bin/python3 (torch 1.13):

    /usr/bin/python3 tests/data/gen_optim.py
"""
import json
import os

import torch

STEPS = 6
SHAPES = [[3, 4], [5], []]
# (step, parameter) pairs whose gradient is None: the optimizer must skip that parameter.
MISSING_GRADS = {(2, 1), (3, 2)}

CASES = [
    # SGD
    ("sgd_plain", "SGD", {"lr": 0.1}),
    ("sgd_momentum", "SGD", {"lr": 0.1, "momentum": 0.9}),
    ("sgd_dampening", "SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    ("sgd_nesterov", "SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("sgd_weight_decay", "SGD", {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.1}),
    ("sgd_weight_decay_no_momentum", "SGD", {"lr": 0.1, "weight_decay": 0.2}),
    ("sgd_maximize", "SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "maximize": True}),
    ("sgd_maximize_plain", "SGD", {"lr": 0.1, "maximize": True}),
    ("sgd_maximize_nesterov", "SGD", {"lr": 0.1, "momentum": 0.8, "nesterov": True,
                                      "maximize": True}),
    ("sgd_maximize_nesterov_weight_decay", "SGD",
     {"lr": 0.1, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1, "maximize": True}),
    # Adam
    ("adam_default", "Adam", {}),
    ("adam_lr_betas_eps", "Adam", {"lr": 0.05, "beta1": 0.8, "beta2": 0.9, "eps": 1e-3}),
    ("adam_amsgrad", "Adam", {"lr": 0.05, "amsgrad": True}),
    ("adam_weight_decay", "Adam", {"lr": 0.05, "weight_decay": 0.1}),
    ("adam_maximize", "Adam", {"lr": 0.05, "maximize": True}),
    ("adam_maximize_amsgrad_weight_decay", "Adam",
     {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    # AdamW
    ("adamw_default", "AdamW", {}),
    ("adamw_weight_decay", "AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    ("adamw_amsgrad", "AdamW", {"lr": 0.05, "amsgrad": True, "beta1": 0.7, "beta2": 0.8}),
    ("adamw_maximize", "AdamW", {"lr": 0.05, "maximize": True, "amsgrad": True}),
    # RMSprop
    ("rmsprop_default", "RMSprop", {}),
    ("rmsprop_alpha_eps", "RMSprop", {"lr": 0.03, "alpha": 0.9, "eps": 1e-4}),
    ("rmsprop_centered", "RMSprop", {"lr": 0.03, "centered": True}),
    ("rmsprop_momentum", "RMSprop", {"lr": 0.03, "momentum": 0.9}),
    ("rmsprop_centered_momentum_weight_decay", "RMSprop",
     {"lr": 0.03, "centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("rmsprop_maximize_plain", "RMSprop", {"lr": 0.03, "maximize": True}),
    ("rmsprop_maximize", "RMSprop", {"lr": 0.03, "centered": True, "momentum": 0.5,
                                     "maximize": True}),
    # Adagrad
    ("adagrad_default", "Adagrad", {}),
    ("adagrad_lr_decay", "Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("adagrad_initial_accumulator_value", "Adagrad",
     {"lr": 0.1, "initial_accumulator_value": 0.5, "eps": 1e-3}),
    ("adagrad_weight_decay", "Adagrad", {"lr": 0.1, "weight_decay": 0.1}),
    ("adagrad_maximize", "Adagrad", {"lr": 0.1, "lr_decay": 0.05, "maximize": True}),
]

# Two parameter groups with their own learning rates (and an overridden option each).
GROUP_CASES = [
    ("sgd_groups", "SGD", {"lr": 0.1, "momentum": 0.9},
     [{"params": [0, 1]}, {"params": [2], "lr": 0.01, "momentum": 0.5}]),
    ("adam_groups", "Adam", {"lr": 0.05},
     [{"params": [0]}, {"params": [1, 2], "lr": 0.2, "beta1": 0.5, "amsgrad": True}]),
    ("adamw_groups", "AdamW", {"lr": 0.05},
     [{"params": [0, 2], "weight_decay": 0.0}, {"params": [1], "lr": 0.01}]),
    ("rmsprop_groups", "RMSprop", {"lr": 0.03, "momentum": 0.5},
     [{"params": [1]}, {"params": [0, 2], "lr": 0.003, "centered": True}]),
    ("adagrad_groups", "Adagrad", {"lr": 0.1},
     [{"params": [0, 1]}, {"params": [2], "lr": 0.5, "lr_decay": 0.2}]),
]

# Learning rates changed between steps (as an LR scheduler does): {step: [lr of each group]}.
LR_CHANGE_CASES = [
    ("sgd_lr_change", "SGD", {"lr": 0.1, "momentum": 0.9},
     [{"params": [0, 1]}, {"params": [2], "lr": 0.05}], {3: [0.02, 0.5], 5: [0.3, 0.0]}),
    ("adam_lr_change", "Adam", {"lr": 0.05}, None, {2: [0.01], 4: [0.2]}),
    ("adamw_lr_change", "AdamW", {"lr": 0.05, "weight_decay": 0.5}, None, {3: [0.5]}),
    ("rmsprop_lr_change", "RMSprop", {"lr": 0.03}, None, {3: [0.001]}),
    ("adagrad_lr_change", "Adagrad", {"lr": 0.1, "lr_decay": 0.1}, None, {1: [0.3]}),
]

OPTIMIZERS = {
    "SGD": torch.optim.SGD,
    "Adam": torch.optim.Adam,
    "AdamW": torch.optim.AdamW,
    "RMSprop": torch.optim.RMSprop,
    "Adagrad": torch.optim.Adagrad,
}


def torch_kwargs(options):
    """Kiln's option names -> torch.optim keyword arguments (beta1/beta2 -> betas)."""
    kwargs = {k: v for k, v in options.items() if k not in ("beta1", "beta2")}
    if "beta1" in options or "beta2" in options:
        kwargs["betas"] = (options.get("beta1", 0.9), options.get("beta2", 0.999))
    return kwargs


def run_case(name, optimizer, options, groups, lr_changes, initial, grads):
    params = [p.clone().requires_grad_() for p in initial]
    kwargs = torch_kwargs(options)
    if groups is None:
        spec = params
    else:
        spec = []
        for group in groups:
            overrides = {k: v for k, v in group.items() if k != "params"}
            if "beta1" in overrides or "beta2" in overrides:
                overrides.setdefault("beta1", options.get("beta1", 0.9))
                overrides.setdefault("beta2", options.get("beta2", 0.999))
            spec.append({"params": [params[i] for i in group["params"]],
                         **torch_kwargs(overrides)})
    opt = OPTIMIZERS[optimizer](spec, foreach=False, **kwargs)
    trajectory = []
    for step in range(STEPS):
        for g, lr in enumerate((lr_changes or {}).get(step, [])):
            opt.param_groups[g]["lr"] = lr
        for p, grad in zip(params, grads[step]):
            p.grad = None if grad is None else grad.clone()
        opt.step()
        trajectory.append([p.detach().reshape(-1).tolist() for p in params])
    case = {"name": name, "optimizer": optimizer, "options": options, "steps": trajectory}
    if groups is not None:
        case["groups"] = groups
    if lr_changes:
        case["lr_changes"] = {str(step): lrs for step, lrs in lr_changes.items()}
    return case


def main():
    torch.manual_seed(0)
    initial = [torch.randn(shape, dtype=torch.float64) for shape in SHAPES]
    # Gradients of varying scale per step, so AMSGrad's running maximum matters.
    grads = [[None if (step, i) in MISSING_GRADS
              else torch.randn(shape, dtype=torch.float64) * (1.5 if step % 2 else 0.4)
              for i, shape in enumerate(SHAPES)] for step in range(STEPS)]
    cases = [run_case(n, o, opts, None, None, initial, grads) for n, o, opts in CASES]
    cases += [run_case(n, o, opts, groups, None, initial, grads)
              for n, o, opts, groups in GROUP_CASES]
    cases += [run_case(n, o, opts, groups, changes, initial, grads)
              for n, o, opts, groups, changes in LR_CHANGE_CASES]
    out = {
        "generator": "tests/data/gen_optim.py, torch " + torch.__version__,
        "shapes": SHAPES,
        "initial": [p.reshape(-1).tolist() for p in initial],
        "grads": [[None if g is None else g.reshape(-1).tolist() for g in step]
                  for step in grads],
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim_reference.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
