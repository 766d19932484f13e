#!/usr/bin/python3
"""Reference values for tests/nn/transformer_test.cpp: runs torch.nn's transformer decoder layer,
encoder and decoder stacks and Transformer, and writes transformer_reference.json.

Each module is built in float64 (seeded) with dropout 0 in train mode (PyTorch's reference path,
not its inference fast path), its parameters randomized so that the copied layers and the norms
hold distinct values, and its state_dict, inputs, output and the gradients of 0.5 * sum(y^2) are
exported in the format of nn_reference.json (tests/nn/reference.h reads both). The C++ test
builds the same module, loads the state dict strictly (so the key names must be PyTorch's) and
compares.

Run from the repository root with Debian's PyTorch (1.13):
    /usr/bin/python3 tests/data/gen_transformer.py
"""
import copy
import json
import math
import os

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)

cases = {}
GRAD_INPUTS = ("src", "tgt", "memory")


def t(x):
    """A tensor as {"shape", "dtype", "data"} (row-major); non-finite values as strings."""
    x = x.detach()
    dtype = {torch.float64: "float64", torch.int64: "int64", torch.bool: "bool"}[x.dtype]
    data = [v if not isinstance(v, float) or math.isfinite(v) else str(v)
            for v in x.reshape(-1).tolist()]
    return {"shape": list(x.shape), "dtype": dtype, "data": data}


def randomize(m):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if p.dim() == 1 else 0.0))
    return m


def case(name, m, inputs, **kwargs):
    """y = m(*positional inputs, **mask inputs); gradients of 0.5 * sum(y^2) on a copy of m."""
    m.train()
    positional = [k for k in inputs if k in GRAD_INPUTS]
    g_module = copy.deepcopy(m)
    g_inputs = {k: (v.clone().requires_grad_() if k in GRAD_INPUTS else v)
                for k, v in inputs.items()}
    y = g_module(*[g_inputs[k] for k in positional],
                 **{k: v for k, v in g_inputs.items() if k not in GRAD_INPUTS}, **kwargs)
    (0.5 * (y ** 2).sum()).backward()
    grads = {"param:" + n: t(p.grad) for n, p in g_module.named_parameters()
             if p.grad is not None}
    grads.update({"input:" + k: t(g_inputs[k].grad) for k in positional})
    with torch.no_grad():
        y = m(*[inputs[k] for k in positional],
              **{k: v for k, v in inputs.items() if k not in GRAD_INPUTS}, **kwargs)
    cases[name] = {
        "state": {k: t(v) for k, v in m.state_dict().items()},
        "inputs": {k: t(v) for k, v in inputs.items()},
        "outputs": {"y": t(y)},
        "grads": grads,
    }


def causal(n, as_bool=False):
    mask = nn.Transformer.generate_square_subsequent_mask(n)
    return mask.isinf() if as_bool else mask


# ---- decoder layers ----
layer = randomize(nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0))
case("decoder_layer_post_norm_relu", layer,
     {"tgt": torch.randn(3, 2, 4), "memory": torch.randn(5, 2, 4),
      "tgt_mask": causal(3),
      "memory_key_padding_mask": torch.tensor([[False, False, True, False, True],
                                               [False, False, False, False, False]])})
layer = randomize(nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0,
                                             activation="gelu", batch_first=True,
                                             norm_first=True, layer_norm_eps=1e-4))
case("decoder_layer_pre_norm_gelu_batch_first", layer,
     {"tgt": torch.randn(2, 3, 4), "memory": torch.randn(2, 5, 4),
      "tgt_mask": causal(3, as_bool=True),
      "memory_mask": torch.randn(3, 5),
      "tgt_key_padding_mask": torch.tensor([[False, False, True], [False, False, False]])})
layer = randomize(nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0))
case("decoder_layer_unbatched", layer,
     {"tgt": torch.randn(3, 4), "memory": torch.randn(5, 4), "tgt_mask": causal(3)})

# ---- stacks: the copies get distinct values, then one forward through all of them ----
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0),
                                2, norm=nn.LayerNorm(4))
randomize(encoder)
case("encoder_stack", encoder,
     {"src": torch.randn(5, 2, 4), "mask": causal(5),
      "src_key_padding_mask": torch.tensor([[False, False, False, False, False],
                                            [False, False, False, True, True]])})
decoder = nn.TransformerDecoder(
    nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True), 2,
    norm=nn.LayerNorm(4))
randomize(decoder)
case("decoder_stack_batch_first", decoder,
     {"tgt": torch.randn(2, 3, 4), "memory": torch.randn(2, 5, 4), "tgt_mask": causal(3),
      "tgt_key_padding_mask": torch.tensor([[False, False, True], [False, False, False]])})

# ---- Transformer: PyTorch's xavier initialization of the matrices, the rest randomized ----
model = nn.Transformer(d_model=4, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                       dim_feedforward=8, dropout=0.0)
with torch.no_grad():
    for p in model.parameters():
        if p.dim() == 1:
            p.copy_(torch.randn_like(p) * 0.5 + 1.0)
case("transformer", model,
     {"src": torch.randn(5, 2, 4), "tgt": torch.randn(3, 2, 4), "tgt_mask": causal(3),
      "src_key_padding_mask": torch.tensor([[False, False, False, False, True],
                                            [False, False, False, False, False]]),
      "memory_key_padding_mask": torch.tensor([[False, False, False, False, True],
                                               [False, False, False, False, False]])})
model = randomize(nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                                 dim_feedforward=8, dropout=0.0, activation="gelu",
                                 batch_first=True, norm_first=True))
case("transformer_batch_first_norm_first", model,
     {"src": torch.randn(2, 5, 4), "tgt": torch.randn(2, 3, 4), "tgt_mask": causal(3),
      "memory_mask": torch.randn(3, 5)})

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "transformer_reference.json")
with open(out, "w") as f:
    json.dump({"generator": "tests/data/gen_transformer.py", "torch": torch.__version__,
               "cases": cases}, f, separators=(",", ":"))
print("wrote", out, len(cases), "cases")
