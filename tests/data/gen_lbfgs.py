#!/usr/bin/python3
"""Reference iterates for tests/optim/lbfgs_test.cpp: torch.optim.LBFGS (PyTorch 1.13) on the
Rosenbrock function from (-1.5, 2) and on a small least-squares problem, in float64. Prints the
values as C++ initializers, which the test holds as literals (it does not run Python).

    /usr/bin/python3 tests/data/gen_lbfgs.py
"""
import math

import torch

torch.set_default_dtype(torch.float64)


def rosenbrock(p):
    return (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2


def run_rosenbrock(name, steps, **options):
    p = torch.tensor([-1.5, 2.0], requires_grad=True)
    opt = torch.optim.LBFGS([p], **options)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(p)
        loss.backward()
        return loss

    print(f"// {name}: LBFGS({options}), {steps} steps")
    print(f"const std::vector<Iterate> {name} = {{")
    for _ in range(steps):
        loss = opt.step(closure)
        state = opt.state[p]
        print(f"    {{{loss.item():.17g}, {{{p[0].item():.17g}, {p[1].item():.17g}}}, "
              f"{state['func_evals']}, {state['n_iter']}}},")
    print("};")


run_rosenbrock("kFixedStep", 4, lr=0.1, max_iter=5)
run_rosenbrock("kStrongWolfe", 4, lr=1, max_iter=6, line_search_fn="strong_wolfe")
run_rosenbrock("kShortHistory", 3, lr=1, max_iter=8, history_size=2,
               line_search_fn="strong_wolfe")

# Least squares: y = X w + b with X[i, j] = sin(0.7 (i + 1) (j + 1)), y[i] = cos(3 i).
X = torch.tensor([[math.sin(0.7 * (i + 1) * (j + 1)) for j in range(3)] for i in range(8)])
y = torch.tensor([[math.cos(3.0 * i)] for i in range(8)])
solution = torch.linalg.lstsq(torch.cat([X, torch.ones(8, 1)], 1), y).solution.reshape(-1)
print("// least squares: the solution (w, b):", [f"{v:.17g}" for v in solution.tolist()])
for line_search in (None, "strong_wolfe"):
    model = torch.nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.1, -0.2, 0.3]]))
        model.bias.fill_(0.05)
    opt = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=20, line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = ((model(X) - y) ** 2).mean()
        loss.backward()
        return loss

    print(f"// least squares, LBFGS(lr=1, max_iter=20, line_search_fn={line_search}): loss, "
          "weight, bias, func_evals, n_iter after each step")
    for _ in range(3):
        loss = opt.step(closure)
        state = opt.state[model.weight]
        print("//", f"{loss.item():.17g}",
              [f"{v:.17g}" for v in model.weight.reshape(-1).tolist()],
              f"{model.bias.item():.17g}", state["func_evals"], state["n_iter"])
