// Custom autograd functions written with torch::autograd::Function, as in LibTorch's autograd
// documentation: MulConstant (a tensor times a double, non-tensor argument saved in saved_data)
// and LinearFunction (input, weight and an optional bias). Their gradients are checked against
// central finite differences and against the same computation done with built-in ops.
//
//   custom_function
//
// Prints RESULT ok at the end; any failed check throws c10::Error and the program exits 1.
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <iostream>

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct MulConstant : public torch::autograd::Function<MulConstant> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, double c) {
    ctx->saved_data["c"] = c;
    ctx->save_for_backward({x});
    return x * c;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    TORCH_CHECK(saved.size() == 1, "MulConstant saved ", saved.size(), " tensors");
    const torch::Tensor& x = saved[0];
    const torch::Tensor& grad = grad_outputs[0];
    TORCH_CHECK(grad.sizes() == x.sizes(), "grad_output has sizes ", grad.sizes());
    const double c = ctx->saved_data["c"].toDouble();
    // One gradient per forward argument after ctx: x, then c (not a tensor: undefined).
    return {grad * c, torch::Tensor()};
  }
};

struct LinearFunction : public torch::autograd::Function<LinearFunction> {
  // input [N, in], weight [out, in], bias [out] or undefined -> [N, out]
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor input, torch::Tensor weight,
                               torch::Tensor bias = torch::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) {
      output += bias.unsqueeze(0).expand_as(output);
    }
    return output;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0];
    auto weight = saved[1];
    auto bias = saved[2];
    auto grad_output = grad_outputs[0];
    auto grad_input = grad_output.mm(weight);
    auto grad_weight = grad_output.t().mm(input);
    auto grad_bias = torch::Tensor();
    if (bias.defined()) {
      grad_bias = grad_output.sum(0);
    }
    return {grad_input, grad_weight, grad_bias};
  }
};

// d(f)/d(x) by central differences, x a double tensor; f returns a scalar tensor.
torch::Tensor numerical_gradient(const std::function<torch::Tensor(const torch::Tensor&)>& f,
                                 const torch::Tensor& x, double eps = 1e-6) {
  torch::NoGradGuard no_grad;
  torch::Tensor grad = torch::zeros_like(x);
  torch::Tensor probe = x.clone();
  auto flat = probe.view({-1});
  auto grad_flat = grad.view({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double original = flat[i].item<double>();
    flat[i] = original + eps;
    const double plus = f(probe).item<double>();
    flat[i] = original - eps;
    const double minus = f(probe).item<double>();
    flat[i] = original;
    grad_flat[i] = (plus - minus) / (2 * eps);
  }
  return grad;
}

void check_close(const torch::Tensor& actual, const torch::Tensor& expected, const char* what) {
  TORCH_CHECK(actual.defined(), what, ": gradient is undefined");
  TORCH_CHECK(actual.sizes() == expected.sizes(), what, ": sizes ", actual.sizes(), " vs ",
              expected.sizes());
  TORCH_CHECK(torch::allclose(actual, expected, /*rtol=*/1e-5, /*atol=*/1e-6), what,
              ": max difference ", (actual - expected).abs().max().item<double>());
}

void check_mul_constant() {
  auto options = torch::TensorOptions().dtype(torch::kFloat64).requires_grad(true);
  torch::Tensor x = torch::randn({2, 3}, options);
  torch::Tensor y = MulConstant::apply(x, 5.5);
  TORCH_CHECK(y.requires_grad(), "MulConstant output does not require grad");
  TORCH_CHECK(y.grad_fn() != nullptr, "MulConstant output has no grad_fn");
  check_close(y.detach(), x.detach() * 5.5, "MulConstant forward");

  // A non-uniform upstream gradient so that the check sees grad_outputs[0] itself.
  torch::Tensor weights = torch::arange(1, 7, torch::kFloat64).view({2, 3});
  (y * weights).sum().backward();
  check_close(x.grad(), weights * 5.5, "MulConstant backward");
  auto numeric = numerical_gradient(
      [&](const torch::Tensor& p) { return (MulConstant::apply(p, 5.5) * weights).sum(); },
      x.detach());
  check_close(x.grad(), numeric, "MulConstant vs finite differences");

  // Gradients accumulate over a second backward.
  MulConstant::apply(x, 5.5).sum().backward();
  check_close(x.grad(), weights * 5.5 + 5.5, "MulConstant accumulated");

  // torch::autograd::grad returns the gradient without touching x.grad().
  torch::Tensor z = torch::randn({4}, options);
  auto grads = torch::autograd::grad({MulConstant::apply(z, -2.0).sum()}, {z});
  check_close(grads[0], torch::full({4}, -2.0, torch::kFloat64), "MulConstant autograd::grad");
  TORCH_CHECK(!z.grad().defined(), "autograd::grad wrote z.grad()");
  std::cout << "MulConstant: ok" << std::endl;
}

void check_linear_function() {
  auto options = torch::TensorOptions().dtype(torch::kFloat64).requires_grad(true);
  torch::Tensor input = torch::randn({5, 3}, options);
  torch::Tensor weight = torch::randn({4, 3}, options);
  torch::Tensor bias = torch::randn({4}, options);

  // With bias, against built-in ops.
  torch::Tensor out = LinearFunction::apply(input, weight, bias);
  TORCH_CHECK(out.sizes() == torch::IntArrayRef({5, 4}), "LinearFunction output sizes ",
              out.sizes());
  out.pow(2).sum().backward();
  torch::Tensor input2 = input.detach().clone().requires_grad_(true);
  torch::Tensor weight2 = weight.detach().clone().requires_grad_(true);
  torch::Tensor bias2 = bias.detach().clone().requires_grad_(true);
  torch::Tensor reference = torch::nn::functional::linear(input2, weight2, bias2);
  check_close(out.detach(), reference.detach(), "LinearFunction forward");
  reference.pow(2).sum().backward();
  check_close(input.grad(), input2.grad(), "LinearFunction grad input");
  check_close(weight.grad(), weight2.grad(), "LinearFunction grad weight");
  check_close(bias.grad(), bias2.grad(), "LinearFunction grad bias");

  // Against finite differences, for each argument.
  auto loss = [&](const torch::Tensor& i, const torch::Tensor& w, const torch::Tensor& b) {
    return LinearFunction::apply(i, w, b).pow(2).sum();
  };
  check_close(input.grad(),
              numerical_gradient(
                  [&](const torch::Tensor& p) { return loss(p, weight.detach(), bias.detach()); },
                  input.detach()),
              "LinearFunction input vs finite differences");
  check_close(weight.grad(),
              numerical_gradient(
                  [&](const torch::Tensor& p) { return loss(input.detach(), p, bias.detach()); },
                  weight.detach()),
              "LinearFunction weight vs finite differences");
  check_close(bias.grad(),
              numerical_gradient(
                  [&](const torch::Tensor& p) { return loss(input.detach(), weight.detach(), p); },
                  bias.detach()),
              "LinearFunction bias vs finite differences");

  // Without bias (the default argument): only input and weight get gradients.
  torch::Tensor x = torch::randn({2, 3}, options);
  torch::Tensor w = torch::randn({4, 3}, options);
  torch::Tensor y = LinearFunction::apply(x, w);
  y.sum().backward();
  check_close(x.grad(), torch::ones({2, 4}, torch::kFloat64).mm(w.detach()),
              "LinearFunction (no bias) grad input");
  check_close(w.grad(), torch::ones({2, 4}, torch::kFloat64).t().mm(x.detach()),
              "LinearFunction (no bias) grad weight");

  // An input that does not require grad gets none, and the others still do.
  torch::Tensor constant_input = torch::randn({2, 3}, torch::kFloat64);
  torch::Tensor w3 = torch::randn({4, 3}, options);
  LinearFunction::apply(constant_input, w3).sum().backward();
  TORCH_CHECK(!constant_input.grad().defined(), "input without requires_grad got a gradient");
  check_close(w3.grad(), torch::ones({2, 4}, torch::kFloat64).t().mm(constant_input),
              "LinearFunction grad weight with constant input");
  std::cout << "LinearFunction: ok" << std::endl;
}

int main() {
  try {
    torch::manual_seed(1);
    check_mul_constant();
    check_linear_function();
  } catch (const c10::Error& e) {
    std::cerr << "custom_function: " << e.what() << std::endl;
    return 1;
  }
  std::cout << "RESULT ok" << std::endl;
  return 0;
}
