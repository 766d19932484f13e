#!/usr/bin/python3
"""PyTorch eager references for kiln-bench (bench/torch_ref.cpp runs this).

Same sizes, units and method as the C++ side: medians over repetitions after a warm-up.
Prints one JSON object: {"torch": version, "threads": n, "results": {name: value}}.
Arguments, when given, name the results to measure (kiln-bench passes the ones it ran).
"""
import json
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read by libgomp when torch loads
import torch  # noqa: E402

REPS = 21


def median_seconds(fn, reps=REPS, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def op_overhead_add_1elem():
    a, b = torch.ones(1), torch.ones(1)
    ops = 2000

    def loop():
        for _ in range(ops):
            a + b

    return median_seconds(loop, reps=REPS * 3, warmup=10) / ops * 1e9


def activation():
    return ((torch.arange(4096 * 1024) % 97).to(torch.float32).view(4096, 1024)) * 0.01


def softmax_f32_4096x1024():
    x = activation()
    return median_seconds(lambda: torch.softmax(x, -1)) * 1e3


def layer_norm_f32_4096x1024():
    x = activation()
    return median_seconds(lambda: torch.nn.functional.layer_norm(x, (1024,))) * 1e3


def train_step(model, x, y, reps=REPS):
    """ms per training step: zero_grad, forward, cross_entropy, backward, SGD(momentum) step."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return median_seconds(step, reps=reps, warmup=5) * 1e3


def train_step_mlp_b64():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    return train_step(model, torch.randn(64, 784), torch.randint(0, 10, (64,)), reps=101)


def fmnist_cnn():
    """The demo's CNN (tools/demo.cpp, examples/fashion_mnist.cpp): two conv blocks + linear."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def train_step_cnn_fmnist_b128():
    torch.manual_seed(0)
    return train_step(fmnist_cnn(), torch.randn(128, 1, 28, 28), torch.randint(0, 10, (128,)),
                      reps=11)


def compiled_train_step_transformer():
    """2 encoder layers (d 256, 4 heads, ff 1024, no dropout), (16, 128, 256), MSE, AdamW."""
    torch.manual_seed(0)
    layer = dict(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0, batch_first=True)
    model = torch.nn.Sequential(torch.nn.TransformerEncoderLayer(**layer),
                                torch.nn.TransformerEncoderLayer(**layer))
    x, y = torch.randn(16, 128, 256), torch.randn(16, 128, 256)
    opt = torch.optim.AdamW(model.parameters())

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    return median_seconds(step, reps=7, warmup=3) * 1e3


def compiled_gelu_chain_16m():
    n = 1 << 24
    a, b, c, d = (torch.randn(n) for _ in range(4))
    return median_seconds(lambda: torch.nn.functional.gelu(a * b + c) * d, reps=11) * 1e3


def compiled_layer_norm_4096x1024():
    x, w, b = activation(), torch.randn(1024), torch.randn(1024)
    return median_seconds(lambda: torch.nn.functional.layer_norm(x, (1024,), w, b)) * 1e3


def compiled_transformer_mlp_block():
    torch.manual_seed(0)
    fc1, fc2 = torch.nn.Linear(256, 1024), torch.nn.Linear(1024, 256)
    x = torch.randn(2048, 256)
    return median_seconds(lambda: x + fc2(torch.nn.functional.gelu(fc1(x)))) * 1e3


def compiled_cnn_fmnist_fwd_b128():
    torch.manual_seed(0)
    model = fmnist_cnn().eval()
    x = torch.randn(128, 1, 28, 28)
    return median_seconds(lambda: model(x), reps=11) * 1e3


def compiled_mlp_b1():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    x = torch.randn(1, 784)
    return median_seconds(lambda: model(x), reps=REPS * 5, warmup=20) * 1e3


def weights(sizes, scale, salt):
    """bench/control_flow.cpp's deterministic weights: the same values on both sides."""
    n = 1
    for s in sizes:
        n *= s
    w = ((torch.arange(n) * 7 + salt) % 101).to(torch.float32).sub(50).div(101).mul(scale)
    return w.view(*sizes)


def compiled_moe_top1_routing():
    tokens, dim, experts = 4096, 256, 8
    gate = weights((dim, experts), 0.2, 1)
    w = [weights((dim, dim), 0.1, 3 + e) for e in range(experts)]
    b = [weights((dim,), 0.1, 11 + e) for e in range(experts)]
    x = weights((tokens, dim), 2.0, 23)

    def forward():
        logits = x.matmul(gate)
        probs = torch.softmax(logits, 1)
        expert = logits.argmax(1)
        out = torch.zeros_like(x)
        for e in range(experts):
            rows = (expert == e).nonzero().squeeze(1)
            y = torch.relu(x.index_select(0, rows).matmul(w[e]) + b[e]) * \
                probs.index_select(0, rows).narrow(1, e, 1)
            out.index_put_((rows,), y)
        return out

    return median_seconds(forward) * 1e3


def compiled_while_loop_decode():
    dim, vocab, steps = 256, 1024, 64
    end_token = vocab  # never produced: every step runs, the stop test on each
    embedding = weights((vocab, dim), 1.0, 5)
    wx1, wh1 = weights((dim, 3 * dim), 0.15, 7), weights((dim, 3 * dim), 0.15, 9)
    wx2, wh2 = weights((dim, 3 * dim), 0.15, 13), weights((dim, 3 * dim), 0.15, 17)
    w_out = weights((dim, vocab), 0.3, 19)

    def gru_cell(x, h, wx, wh):
        gx, gh = x.matmul(wx), h.matmul(wh)
        r = torch.sigmoid(gx.narrow(1, 0, dim) + gh.narrow(1, 0, dim))
        z = torch.sigmoid(gx.narrow(1, dim, dim) + gh.narrow(1, dim, dim))
        n = torch.tanh(gx.narrow(1, 2 * dim, dim) + r * gh.narrow(1, 2 * dim, dim))
        return (1 - z) * n + z * h

    def decode():
        token, h1 = torch.tensor(1), torch.zeros(1, dim)
        h2 = h1
        step = 0
        while step < steps and token.item() != end_token:
            x = embedding.index_select(0, token.view(1))
            h1 = gru_cell(x, h1, wx1, wh1)
            h2 = gru_cell(h1, h2, wx2, wh2)
            token = h2.matmul(w_out).argmax(1).view(())
            step += 1
        return token, h2

    return median_seconds(decode) * 1e3


# name -> (function, runs under torch.no_grad)
BENCHMARKS = {
    "op_overhead_add_1elem": (op_overhead_add_1elem, True),
    "softmax_f32_4096x1024": (softmax_f32_4096x1024, True),
    "layer_norm_f32_4096x1024": (layer_norm_f32_4096x1024, True),
    "train_step_mlp_b64": (train_step_mlp_b64, False),
    "train_step_cnn_fmnist_b128": (train_step_cnn_fmnist_b128, False),
    # Compiled training steps (bench/train.cpp): PyTorch runs the same steps eagerly.
    "compiled_train_step_mlp_b64": (train_step_mlp_b64, False),
    "compiled_train_step_cnn_fmnist_b128": (train_step_cnn_fmnist_b128, False),
    "compiled_train_step_transformer": (compiled_train_step_transformer, False),
    "compiled_gelu_chain_16M": (compiled_gelu_chain_16m, True),
    "compiled_softmax_4096x1024": (softmax_f32_4096x1024, True),
    "compiled_layer_norm_4096x1024": (compiled_layer_norm_4096x1024, True),
    "compiled_transformer_mlp_block": (compiled_transformer_mlp_block, True),
    "compiled_cnn_fmnist_fwd_b128": (compiled_cnn_fmnist_fwd_b128, True),
    "compiled_mlp_b1": (compiled_mlp_b1, True),
    "compiled_moe_top1_routing": (compiled_moe_top1_routing, True),
    "compiled_while_loop_decode": (compiled_while_loop_decode, True),
}


def main():
    torch.set_num_threads(2)
    wanted = [n for n in sys.argv[1:] if n in BENCHMARKS] if len(sys.argv) > 1 else list(BENCHMARKS)
    results = {}
    for name in wanted:
        fn, no_grad = BENCHMARKS[name]
        if no_grad:
            with torch.no_grad():
                results[name] = fn()
        else:
            results[name] = fn()
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "results": results}))


if __name__ == "__main__":
    main()
