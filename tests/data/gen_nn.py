#!/usr/bin/python3
"""Reference values for tests/nn: runs torch.nn modules and losses and writes nn_reference.json.

Every module is built in float64 with PyTorch's default initialization (seeded), and its
state_dict, inputs and outputs are exported; the C++ tests build the same module, load the state
dict with load_state_dict and compare. Shapes are tiny to keep the file small.

Run from the repository root with Debian's PyTorch (1.13):
    /usr/bin/python3 tests/data/gen_nn.py
"""
import copy
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)

cases = {}


def t(x):
    """A tensor as {"shape", "dtype", "data"} (row-major)."""
    x = x.detach()
    dtype = {torch.float64: "float64", torch.int64: "int64", torch.bool: "bool"}[x.dtype]
    # JSON has no infinities: non-finite values are written as the strings "inf", "-inf", "nan".
    data = [v if not isinstance(v, float) or math.isfinite(v) else str(v)
            for v in x.reshape(-1).tolist()]
    return {"shape": list(x.shape), "dtype": dtype, "data": data}


def state(m):
    return {k: t(v) for k, v in m.state_dict().items()}


def add(name, module=None, inputs=None, outputs=None, **extra):
    case = {}
    if module is not None:
        case["state"] = state(module)
        case["repr"] = repr(module)
    case["inputs"] = {k: t(v) for k, v in (inputs or {}).items()}
    case["outputs"] = {k: t(v) for k, v in (outputs or {}).items()}
    case.update(extra)
    cases[name] = case


def randomize(m):
    """Non-trivial values for parameters PyTorch initializes to constants (norm weights, biases)."""
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if p.dim() == 1 else 0.0))
    return m


GRAD_INPUTS = ("x", "x1", "q", "k", "v", "input")


def gradients(m, call, inputs, scalar=False):
    """Gradients of 0.5 * sum(y^2) (of y itself when `scalar`, for losses), y = call(m, **inputs),
    computed on a copy of m so that its state (running statistics) stays as it was: "param:<name>"
    for every parameter that gets one, "input:<name>" for the floating inputs in GRAD_INPUTS."""
    m = copy.deepcopy(m) if m is not None else None
    inputs = {k: v.clone().requires_grad_() if k in GRAD_INPUTS and v.is_floating_point() else v
              for k, v in inputs.items()}
    y = call(m, **inputs)
    (y if scalar else 0.5 * (y ** 2).sum()).backward()
    g = {}
    if m is not None:
        g.update({"param:" + n: t(p.grad) for n, p in m.named_parameters() if p.grad is not None})
    g.update({"input:" + k: t(v.grad) for k, v in inputs.items() if v.grad is not None})
    return g


def run(name, m, **inputs):
    """Forward of a one-input module under no_grad, and the gradients of 0.5 * sum(y^2)."""
    grads = gradients(m, lambda mod, **kw: mod(*kw.values()), inputs)
    with torch.no_grad():
        y = m(*inputs.values())
    add(name, m, inputs, {"y": y}, grads=grads)


# ---- Linear ----
run("linear", nn.Linear(4, 3), x=torch.randn(2, 4))
run("linear_no_bias_3d", nn.Linear(4, 3, bias=False), x=torch.randn(2, 3, 4))

# ---- convolutions ----
run("conv1d_stride_pad", nn.Conv1d(2, 4, 3, stride=2, padding=1), x=torch.randn(2, 2, 7))
run("conv1d_same_dilated", nn.Conv1d(2, 4, 3, padding="same", dilation=2, bias=False),
    x=torch.randn(2, 2, 7))
run("conv1d_same_circular_groups",
    nn.Conv1d(4, 4, 2, groups=2, padding="same", padding_mode="circular"), x=torch.randn(1, 4, 5))
run("conv2d_groups", nn.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=(1, 0), groups=2),
    x=torch.randn(2, 2, 5, 4))
run("conv2d_same_dilated", nn.Conv2d(2, 3, 3, padding="same", dilation=2),
    x=torch.randn(1, 2, 5, 6))
run("conv2d_reflect", nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
    x=torch.randn(1, 2, 4, 5))
run("conv2d_replicate", nn.Conv2d(1, 2, 3, padding=(1, 2), padding_mode="replicate"),
    x=torch.randn(1, 1, 4, 4))
run("conv2d_valid_unbatched", nn.Conv2d(2, 3, 2, stride=2, padding="valid", bias=False),
    x=torch.randn(2, 5, 5))


# ---- batch norm: two training steps, then eval ----
def batch_norm_case(name, m, x1, x2, x3):
    randomize(m)
    initial = state(m)
    m.train()
    grads = gradients(m, lambda mod, x1: mod(x1), {"x1": x1})  # a training step's gradients
    with torch.no_grad():
        y1 = m(x1)
        y2 = m(x2)
    after_train = state(m)
    m.eval()
    with torch.no_grad():
        y3 = m(x3)
    cases[name] = {
        "state": initial, "repr": repr(m),
        "inputs": {"x1": t(x1), "x2": t(x2), "x3": t(x3)},
        "outputs": {"y1": t(y1), "y2": t(y2), "y3": t(y3)},
        "state_after_train": after_train,
        "grads": grads,
    }


batch_norm_case("batchnorm1d", nn.BatchNorm1d(3), torch.randn(4, 3), torch.randn(4, 3, 2) + 1,
                torch.randn(2, 3))
batch_norm_case("batchnorm1d_cumulative", nn.BatchNorm1d(3, momentum=None), torch.randn(4, 3),
                torch.randn(5, 3) * 2, torch.randn(2, 3, 2))
batch_norm_case("batchnorm2d", nn.BatchNorm2d(2, eps=1e-3, momentum=0.3),
                torch.randn(2, 2, 3, 3), torch.randn(3, 2, 2, 2), torch.randn(1, 2, 2, 3))
batch_norm_case("batchnorm2d_no_stats",
                nn.BatchNorm2d(2, affine=False, track_running_stats=False),
                torch.randn(2, 2, 2, 2), torch.randn(2, 2, 2, 2), torch.randn(2, 2, 2, 3))

# ---- layer and group norm, embedding ----
run("layernorm", randomize(nn.LayerNorm([3, 4])), x=torch.randn(2, 3, 4))
run("layernorm_no_affine", nn.LayerNorm(4, eps=1e-3, elementwise_affine=False),
    x=torch.randn(3, 4) * 3)
run("groupnorm", randomize(nn.GroupNorm(2, 4)), x=torch.randn(2, 4, 3))
run("embedding", nn.Embedding(5, 3, padding_idx=1), x=torch.tensor([[0, 1, 4], [3, 3, 2]]))
run("embedding_negative_padding_idx", nn.Embedding(4, 2, padding_idx=-1),
    x=torch.tensor([3, 0, 3]))

# ---- activations ----
act_x = torch.randn(3, 4) * 3
act_x[0, 0] = 25.0  # past Softplus's threshold
for name, m in [("relu", nn.ReLU()), ("gelu", nn.GELU()), ("gelu_tanh", nn.GELU("tanh")),
                ("silu", nn.SiLU()), ("sigmoid", nn.Sigmoid()), ("tanh", nn.Tanh()),
                ("softplus", nn.Softplus(beta=2, threshold=1)), ("leaky_relu", nn.LeakyReLU(0.2)),
                ("elu", nn.ELU(alpha=1.5)), ("softmax", nn.Softmax(dim=1)),
                ("log_softmax", nn.LogSoftmax(dim=0))]:
    run("act_" + name, m, x=act_x)

# ---- pooling and shape ----
pool_x = torch.randn(1, 2, 5, 7)
run("maxpool2d", nn.MaxPool2d(2), x=pool_x)
run("maxpool2d_options", nn.MaxPool2d(3, stride=2, padding=1, dilation=1, ceil_mode=True),
    x=pool_x)
run("avgpool2d_options",
    nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), x=pool_x)
run("avgpool2d_divisor", nn.AvgPool2d(2, divisor_override=3), x=pool_x)
run("adaptive_avgpool2d", nn.AdaptiveAvgPool2d((2, 3)), x=pool_x)
run("flatten", nn.Flatten(), x=pool_x)

# ---- attention ----
def mha_case(name, m, q, k, v, **kwargs):
    grads = gradients(m, lambda mod, q, k, v: mod(q, k, v, **kwargs)[0], {"q": q, "k": k, "v": v})
    with torch.no_grad():
        out, w = m(q, k, v, **kwargs)
    inputs = {"q": q, "k": k, "v": v}
    for key in ("key_padding_mask", "attn_mask"):
        if kwargs.get(key) is not None:
            inputs[key] = kwargs[key]
    add(name, m, inputs, {"out": out, "weights": w} if w is not None else {"out": out},
        grads=grads)


mha = nn.MultiheadAttention(4, 2)
kpm = torch.tensor([[False, False, True, False, True], [False, False, False, False, False]])
mha_case("mha_seq_first_masks", mha, torch.randn(3, 2, 4), torch.randn(5, 2, 4),
         torch.randn(5, 2, 4), key_padding_mask=kpm, attn_mask=torch.randn(3, 5))
mha_bf = nn.MultiheadAttention(4, 2, batch_first=True)
bool_mask = torch.tensor([[False, True, False, False, True], [True, False, False, True, False],
                          [False, False, True, False, False]])
mha_case("mha_batch_first_bool_mask_per_head", mha_bf, torch.randn(2, 3, 4), torch.randn(2, 5, 4),
         torch.randn(2, 5, 4), attn_mask=bool_mask, average_attn_weights=False)
mha_nb = nn.MultiheadAttention(4, 4, bias=False)
x_nb = torch.randn(3, 4)
mha_case("mha_unbatched_self_no_bias", mha_nb, x_nb, x_nb, x_nb)
mha3 = nn.MultiheadAttention(4, 2)
mha_case("mha_3d_float_mask", mha3, torch.randn(2, 2, 4), torch.randn(3, 2, 4),
         torch.randn(3, 2, 4), attn_mask=torch.randn(4, 2, 3))
# A floating key_padding_mask is added to the scores. (Only without attn_mask: PyTorch 1.13 merges
# a floating key_padding_mask into a floating attn_mask with masked_fill, which ignores it; 2.x
# adds both, as Kiln does.)
mha_case("mha_float_padding", mha3, torch.randn(2, 2, 4), torch.randn(3, 2, 4),
         torch.randn(3, 2, 4), key_padding_mask=torch.tensor([[0.0, -1.5, 0.5], [2.0, 0.0, 0.0]]))


# ---- transformer encoder layer (train mode with dropout 0: PyTorch's slow, reference path) ----
def encoder_case(name, m, x, **kwargs):
    randomize_norms = [m.norm1, m.norm2]
    for n in randomize_norms:
        randomize(n)
    m.train()
    grads = gradients(m, lambda mod, x: mod(x, **kwargs), {"x": x})
    with torch.no_grad():
        y = m(x, **kwargs)
    inputs = {"x": x}
    inputs.update({k: v for k, v in kwargs.items() if v is not None})
    add(name, m, inputs, {"y": y}, grads=grads)


encoder_case("encoder_post_norm_relu",
             nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0),
             torch.randn(3, 2, 4),
             src_key_padding_mask=torch.tensor([[False, False, True], [False, False, False]]))
causal = torch.triu(torch.full((3, 3), float("-inf")), diagonal=1)
encoder_case("encoder_pre_norm_gelu_batch_first",
             nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, activation="gelu",
                                        norm_first=True, batch_first=True, layer_norm_eps=1e-4),
             torch.randn(2, 3, 4), src_mask=causal)


# ---- losses: outputs per reduction ----
def loss_case(name, make, x, target, reductions=("none", "mean", "sum"), with_grads=True):
    outputs = {}
    module = None
    for r in reductions:
        module = make(r)
        with torch.no_grad():
            outputs[r] = module(x, target)
    # The gradient of the averaged loss (batchmean where the loss has it) with respect to input.
    extra = {}
    if with_grads:
        grad_reduction = "batchmean" if "batchmean" in reductions else "mean"
        extra["grads"] = gradients(None,
                                   lambda _, input, target: make(grad_reduction)(input, target),
                                   {"input": x, "target": target}, scalar=True)
        extra["grad_reduction"] = grad_reduction
    add(name, None, {"input": x, "target": target}, outputs, state=state(module), repr=repr(module),
        **extra)


logits = torch.randn(4, 3)
classes = torch.tensor([0, 2, 1, 2])
ce_weight = torch.tensor([0.2, 0.3, 0.5])
loss_case("cross_entropy", lambda r: nn.CrossEntropyLoss(reduction=r), logits, classes)
loss_case("cross_entropy_weight_ignore_smoothing",
          lambda r: nn.CrossEntropyLoss(weight=ce_weight, ignore_index=1, label_smoothing=0.1,
                                        reduction=r), logits, classes)
loss_case("cross_entropy_probabilities", lambda r: nn.CrossEntropyLoss(reduction=r),
          logits, torch.softmax(torch.randn(4, 3), 1))
loss_case("cross_entropy_spatial", lambda r: nn.CrossEntropyLoss(reduction=r),
          torch.randn(2, 3, 2), torch.tensor([[0, 2], [1, 1]]))
loss_case("nll", lambda r: nn.NLLLoss(weight=ce_weight, ignore_index=1, reduction=r),
          torch.log_softmax(logits, 1), classes)
reg_x, reg_y = torch.randn(3, 4), torch.randn(3, 4)
loss_case("mse", lambda r: nn.MSELoss(reduction=r), reg_x, reg_y)
loss_case("l1", lambda r: nn.L1Loss(reduction=r), reg_x, reg_y)
loss_case("smooth_l1", lambda r: nn.SmoothL1Loss(reduction=r, beta=0.5), reg_x, reg_y)
loss_case("huber", lambda r: nn.HuberLoss(reduction=r, delta=0.7), reg_x, reg_y)
loss_case("l1_broadcast_target", lambda r: nn.L1Loss(reduction=r), reg_x, torch.randn(4),
          reductions=("mean",))
bce_p = torch.tensor([[0.0, 0.3, 1.0], [0.9, 0.5, 0.1]])
bce_t = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.5]])
# Probabilities of exactly 0 and 1: values only. PyTorch's gradient divides by
# max(x (1 - x), 1e-12), Kiln's is the exact derivative (slope 0 where the log is clamped); they
# agree where x (1 - x) >= 1e-12, which bce_interior checks.
loss_case("bce_clamped_log",
          lambda r: nn.BCELoss(weight=torch.tensor([0.5, 1.0, 2.0]), reduction=r), bce_p, bce_t,
          with_grads=False)
loss_case("bce_interior",
          lambda r: nn.BCELoss(weight=torch.tensor([0.5, 1.0, 2.0]), reduction=r),
          torch.tensor([[1e-6, 0.3, 0.999], [0.9, 0.5, 0.1]]), bce_t)
loss_case("bce_with_logits_pos_weight",
          lambda r: nn.BCEWithLogitsLoss(weight=torch.tensor([1.0, 0.5, 2.0]),
                                         pos_weight=torch.tensor([3.0, 1.0, 0.5]), reduction=r),
          torch.randn(2, 3) * 3, bce_t)
kl_target = torch.softmax(torch.randn(3, 4), 1)
kl_target[1, 2] = 0.0  # xlogy: contributes 0
loss_case("kl_div", lambda r: nn.KLDivLoss(reduction=r), torch.log_softmax(torch.randn(3, 4), 1),
          kl_target, reductions=("none", "mean", "sum", "batchmean"))
loss_case("kl_div_log_target", lambda r: nn.KLDivLoss(reduction=r, log_target=True),
          torch.log_softmax(torch.randn(3, 4), 1), torch.log_softmax(torch.randn(3, 4), 1),
          reductions=("none", "batchmean"))

# ---- a small CNN as Sequential: state dict keys, repr, eval forward ----
net = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2),
                    nn.Flatten(), nn.Linear(8, 3))
randomize(net[1])
with torch.no_grad():
    net[1].running_mean.copy_(torch.randn(2) * 0.1)
    net[1].running_var.copy_(torch.rand(2) + 0.5)
net.eval()
net_x = torch.randn(2, 1, 4, 4)
net_grads = gradients(net, lambda mod, x: mod(x), {"x": net_x})
with torch.no_grad():
    net_y = net(net_x)
add("sequential_cnn", net, {"x": net_x}, {"y": net_y}, state_keys=list(net.state_dict().keys()),
    parameter_names=[n for n, _ in net.named_parameters()], grads=net_grads)

# ---- printing: nested containers, extra_repr with children ----
nested = nn.Sequential(nn.Linear(4, 3), nn.ReLU(),
                       nn.Sequential(nn.Conv2d(1, 2, 3, bias=False), nn.BatchNorm2d(2)),
                       nn.Dropout(0.25), nn.GELU("tanh"))
add("repr_nested", nested)
add("repr_module_list", nn.ModuleList([nn.LayerNorm([4]), nn.Embedding(10, 4),
                                       nn.GroupNorm(2, 4, affine=False)]))

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn_reference.json")
with open(out, "w") as f:
    json.dump({"generator": "tests/data/gen_nn.py", "torch": torch.__version__, "cases": cases}, f,
              separators=(",", ":"), allow_nan=False)
print(f"wrote {out}: {os.path.getsize(out)} bytes, {len(cases)} cases")
