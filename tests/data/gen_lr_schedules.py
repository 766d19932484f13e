#!/usr/bin/python3
"""Generates tests/data/lr_schedules_extra.json: learning-rate (and momentum/beta1) sequences of
every PyTorch LR scheduler mode and option, for tests/optim/lr_scheduler_*_test.cpp.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_lr_schedules.py

Setup (the same as tests/data/lr_schedules.json, copied from the shared reference data): SGD with
momentum 0.9 (or Adam with betas (0.9, 0.999) where a case says "Adam"), parameter group i with
lr 0.1 * (i + 1) unless the case says otherwise; each iteration records the lr (and the momentum or
beta1 when the scheduler cycles it) of every group, then the optimizer steps, then the scheduler
steps. ReduceLROnPlateau steps with the case's "metrics". The case names are the keys the C++
tests look up; each C++ test builds the same configuration by hand.

torch 1.13's CyclicLR cycles only "momentum" and rejects Adam; PyTorch 2's CyclicLR cycles beta1 of
an Adam-like optimizer with the same formula (CyclicLR.get_lr in torch/optim/lr_scheduler.py), so
the "beta1" case records the momentum sequence of the identical SGD configuration.
"""
import json
import math
import os

import torch
from torch.optim import SGD, Adam
from torch.optim import lr_scheduler as S


def make_optimizer(groups=2, base=None, adam=False):
    base = base or [0.1 * (i + 1) for i in range(groups)]
    params = [{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in base]
    if adam:
        return Adam(params, lr=base[0], betas=(0.9, 0.999))
    return SGD(params, lr=base[0], momentum=0.9)


def fake_step(opt):
    for g in opt.param_groups:
        for p in g["params"]:
            p.grad = torch.ones_like(p)
    opt.step()


def record(opt, sched, steps, track=None, metrics=None, step_calls=None):
    """Runs `steps` iterations. track: None, "momentum" or "beta1". step_calls: a list whose
    element i is None (sched.step()) or an epoch for sched.step(epoch)."""
    out = {"lr": []}
    if track:
        out[track] = []
    for i in range(steps):
        out["lr"].append([g["lr"] for g in opt.param_groups])
        if track == "momentum":
            out[track].append([g["momentum"] for g in opt.param_groups])
        elif track == "beta1":
            out[track].append([g["betas"][0] for g in opt.param_groups])
        fake_step(opt)
        if metrics is not None:
            sched.step(metrics[i])
        elif step_calls is not None and step_calls[i] is not None:
            sched.step(step_calls[i])
        else:
            sched.step()
    if metrics is not None:
        out["metrics"] = list(metrics[:steps])
    return out


CASES = {}


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn

    return register


# ---- the closed-form and recursive ("chainable") decays, two or three groups each ----------------
@case("LambdaLR(per-group: 0.95**e, 1/(e+1)) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.LambdaLR(o, [lambda e: 0.95**e, lambda e: 1.0 / (e + 1)]), 8)


@case("MultiplicativeLR(per-group: 0.9, 0.5 if e%3==0 else 1) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 0.5 if e % 3 == 0 else 1.0]), 10)


@case("StepLR(step_size=2,gamma=0.3) groups=3")
def _():
    o = make_optimizer(3)
    return record(o, S.StepLR(o, step_size=2, gamma=0.3), 9)


@case("MultiStepLR(milestones=[1,3,3,6],gamma=0.5) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.MultiStepLR(o, milestones=[1, 3, 3, 6], gamma=0.5), 9)


@case("ConstantLR(factor=0.5,total_iters=3) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.ConstantLR(o, factor=0.5, total_iters=3), 7)


@case("LinearLR(default) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.LinearLR(o), 8)


@case("LinearLR(start_factor=1.0,end_factor=0.2,total_iters=4) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.LinearLR(o, start_factor=1.0, end_factor=0.2, total_iters=4), 7)


@case("ExponentialLR(gamma=0.8) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.ExponentialLR(o, gamma=0.8), 7)


@case("PolynomialLR(total_iters=4,power=1.0) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.PolynomialLR(o, total_iters=4, power=1.0), 7)


@case("PolynomialLR(total_iters=5,power=0.5) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.PolynomialLR(o, total_iters=5, power=0.5), 8)


@case("CosineAnnealingLR(T_max=4,eta_min=0) groups=2")
def _():
    # 20 steps: past T_max the recursive form climbs back up (its restart branch).
    o = make_optimizer(2)
    return record(o, S.CosineAnnealingLR(o, T_max=4, eta_min=0.0), 20)


@case("CosineAnnealingWarmRestarts(T_0=3,T_mult=1,eta_min=0) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=1, eta_min=0.0), 12)


@case("CosineAnnealingWarmRestarts(T_0=2,T_mult=2,eta_min=0.01) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.01), 16)


@case("CosineAnnealingWarmRestarts(T_0=2,T_mult=2) step(epoch + i/4) groups=2")
def _():
    # The docstring's per-batch use: step(epoch + i / iters), iters = 4, for 6 epochs.
    o = make_optimizer(2)
    s = S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.0)
    calls = [e + (i + 1) / 4 for e in range(6) for i in range(4)]
    return record(o, s, len(calls), step_calls=calls)


@case("CosineAnnealingWarmRestarts(T_0=3,T_mult=2) step()x5, step(9.5), step()x4 groups=2")
def _():
    o = make_optimizer(2)
    s = S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.0)
    calls = [None] * 5 + [9.5] + [None] * 4
    return record(o, s, len(calls), step_calls=calls)


# ---- CyclicLR ------------------------------------------------------------------------------------
@case("CyclicLR(triangular2,base=[0.01,0.02],max=[0.1,0.2],up=2,down=3,momentum 0.8-0.9) groups=2")
def _():
    o = make_optimizer(2)
    s = S.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.2], step_size_up=2, step_size_down=3,
                   mode="triangular2", base_momentum=0.8, max_momentum=0.9)
    return record(o, s, 20, track="momentum")


@case("CyclicLR(exp_range,gamma=0.9,base=0.01,max=0.1,up=3,momentum [0.85,0.8]-[0.95,0.9]) groups=2")
def _():
    o = make_optimizer(2)
    s = S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range", gamma=0.9,
                   base_momentum=[0.85, 0.8], max_momentum=[0.95, 0.9])
    return record(o, s, 20, track="momentum")


@case("CyclicLR(scale_fn=0.5**x,scale_mode=cycle,base=0.01,max=0.1,up=2,no momentum) groups=2")
def _():
    o = make_optimizer(2)
    s = S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: 0.5**x,
                   scale_mode="cycle", cycle_momentum=False)
    return record(o, s, 14, track="momentum")


@case("CyclicLR(scale_fn=1/(1+0.1x),scale_mode=iterations,base=0.01,max=0.1,up=2,no momentum) groups=2")
def _():
    o = make_optimizer(2)
    s = S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                   scale_fn=lambda x: 1.0 / (1.0 + 0.1 * x), scale_mode="iterations",
                   cycle_momentum=False)
    return record(o, s, 14, track="momentum")


@case("CyclicLR(triangular,base=0.01,max=0.1,up=3,Adam beta1 0.8-0.9) groups=2")
def _():
    # See the module docstring: the same configuration on SGD; its momentum is the beta1 sequence.
    o = make_optimizer(2)
    s = S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular",
                   base_momentum=0.8, max_momentum=0.9)
    out = record(o, s, 14, track="momentum")
    out["beta1"] = out.pop("momentum")
    return out


# ---- OneCycleLR ----------------------------------------------------------------------------------
@case("OneCycleLR(max_lr=[0.5,1.0],total_steps=15,cos,momentum) groups=2")
def _():
    o = make_optimizer(2)
    return record(o, S.OneCycleLR(o, max_lr=[0.5, 1.0], total_steps=15), 15, track="momentum")


@case("OneCycleLR(max_lr=0.4,epochs=3,steps_per_epoch=5,pct_start=0.4,linear,div=10,final_div=100,"
      "momentum [0.8,0.7]-[0.9,0.95]) groups=2")
def _():
    o = make_optimizer(2)
    s = S.OneCycleLR(o, max_lr=0.4, epochs=3, steps_per_epoch=5, pct_start=0.4,
                     anneal_strategy="linear", div_factor=10.0, final_div_factor=100.0,
                     base_momentum=[0.8, 0.7], max_momentum=[0.9, 0.95])
    return record(o, s, 15, track="momentum")


@case("OneCycleLR(max_lr=0.5,total_steps=20,three_phase,cos,momentum) groups=2")
def _():
    o = make_optimizer(2)
    s = S.OneCycleLR(o, max_lr=0.5, total_steps=20, three_phase=True)
    return record(o, s, 20, track="momentum")


@case("OneCycleLR(max_lr=[0.01,0.02],total_steps=16,three_phase,linear,Adam beta1) groups=2")
def _():
    o = make_optimizer(2, adam=True)
    s = S.OneCycleLR(o, max_lr=[0.01, 0.02], total_steps=16, three_phase=True,
                     anneal_strategy="linear")
    return record(o, s, 16, track="beta1")


@case("OneCycleLR(max_lr=0.3,total_steps=10,pct_start=0.25,no momentum) groups=2")
def _():
    o = make_optimizer(2)
    s = S.OneCycleLR(o, max_lr=0.3, total_steps=10, pct_start=0.25, cycle_momentum=False)
    return record(o, s, 10, track="momentum")


# ---- ReduceLROnPlateau ---------------------------------------------------------------------------
ACCURACY = [0.5, 0.6, 0.6, 0.59, 0.61, 0.6, 0.6, 0.6, 0.7, 0.69, 0.69, 0.69, 0.69, 0.69, 0.7]
LOSS = [1.0, 0.9, 0.88, 0.87, 0.9, 0.86, 0.8, 0.79, 0.795, 0.8, 0.81, 0.7, 0.72, 0.73, 0.74, 0.75]


@case("ReduceLROnPlateau(mode=max,factor=0.5,patience=1) groups=2")
def _():
    o = make_optimizer(2)
    s = S.ReduceLROnPlateau(o, mode="max", factor=0.5, patience=1)
    return record(o, s, len(ACCURACY), metrics=ACCURACY)


@case("ReduceLROnPlateau(mode=min,threshold=0.05,threshold_mode=abs,factor=0.5,patience=0,cooldown=2,"
      "min_lr=[0.02,0.05]) groups=2")
def _():
    o = make_optimizer(2)
    s = S.ReduceLROnPlateau(o, mode="min", threshold=0.05, threshold_mode="abs", factor=0.5,
                            patience=0, cooldown=2, min_lr=[0.02, 0.05])
    return record(o, s, len(LOSS), metrics=LOSS)


@case("ReduceLROnPlateau(mode=max,threshold=0.02,threshold_mode=abs,factor=0.1,patience=2) groups=3")
def _():
    o = make_optimizer(3)
    s = S.ReduceLROnPlateau(o, mode="max", threshold=0.02, threshold_mode="abs", factor=0.1,
                            patience=2)
    return record(o, s, len(ACCURACY), metrics=ACCURACY)


@case("ReduceLROnPlateau(mode=min,factor=0.5,patience=0,min_lr=0.03,eps=0.02) groups=2")
def _():
    # eps: a reduction smaller than eps is skipped (group 0 stops at 0.05, not 0.03).
    o = make_optimizer(2)
    s = S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=0, min_lr=0.03, eps=0.02)
    return record(o, s, len(LOSS), metrics=LOSS)


# ---- composition ---------------------------------------------------------------------------------
@case("SequentialLR([ConstantLR(0.1,20),ExponentialLR(0.9)],milestones=[20]) base=[0.05,0.1]")
def _():
    o = make_optimizer(2, base=[0.05, 0.1])
    s = S.SequentialLR(o, [S.ConstantLR(o, factor=0.1, total_iters=20), S.ExponentialLR(o, 0.9)],
                       milestones=[20])
    return record(o, s, 26)


@case("SequentialLR([LinearLR(0.1,1,3),CosineAnnealingLR(T_max=4),StepLR(2,0.5)],milestones=[3,8])"
      " groups=2")
def _():
    o = make_optimizer(2)
    s = S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=3),
                           S.CosineAnnealingLR(o, T_max=4),
                           S.StepLR(o, step_size=2, gamma=0.5)], milestones=[3, 8])
    return record(o, s, 14)


@case("ChainedScheduler([ConstantLR(0.1,4),ExponentialLR(0.9)]) groups=2")
def _():
    o = make_optimizer(2)
    s = S.ChainedScheduler([S.ConstantLR(o, factor=0.1, total_iters=4), S.ExponentialLR(o, 0.9)])
    return record(o, s, 8)


@case("ChainedScheduler([LinearLR(0.5,1,4),CosineAnnealingLR(T_max=6,eta_min=0.001),"
      "MultiStepLR([2,5],0.5)]) groups=2")
def _():
    o = make_optimizer(2)
    s = S.ChainedScheduler([S.LinearLR(o, start_factor=0.5, end_factor=1.0, total_iters=4),
                            S.CosineAnnealingLR(o, T_max=6, eta_min=0.001),
                            S.MultiStepLR(o, milestones=[2, 5], gamma=0.5)])
    return record(o, s, 12)


@case("StepLR(2,0.5) and ExponentialLR(0.9) both stepped, no ChainedScheduler groups=2")
def _():
    o = make_optimizer(2)

    class Both:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def step(self):
            self.a.step()
            self.b.step()

    return record(o, Both(S.StepLR(o, 2, 0.5), S.ExponentialLR(o, 0.9)), 8)


def main():
    out = {
        "torch": torch.__version__,
        "note": __doc__.strip().split("\n\n")[1].replace("\n", " "),
        "cases": {name: fn() for name, fn in CASES.items()},
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lr_schedules_extra.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {len(CASES)} cases to {path}")


if __name__ == "__main__":
    main()
