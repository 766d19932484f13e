// A LibTorch program in the shape of pytorch/examples cpp/regression: fit a random polynomial of
// degree 4, y = w1 x + w2 x^2 + w3 x^3 + w4 x^4 + b, with one torch::nn::Linear(4, 1) layer on
// fresh random batches until the smooth L1 loss drops below 1e-3.
//
//   regression [MAX_BATCHES]     (default 100000; exits 1 if the loss is still too high then)
//
// The last line printed is machine readable:  RESULT loss=<float> batches=<int>
// Built with -DKILN_COMPILE (regression_compiled), the loss goes through torch::compile.
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int64_t kPolyDegree = 4;
constexpr int64_t kBatchSize = 32;

// [N, 1] -> [N, kPolyDegree]: the columns x, x^2, x^3, x^4.
torch::Tensor make_features(const torch::Tensor& x) {
  std::vector<torch::Tensor> columns;
  for (int64_t i = 1; i <= kPolyDegree; ++i) {
    columns.push_back(torch::pow(x, i));
  }
  return torch::cat(columns, /*dim=*/1);
}

// The same features in one broadcasting pow: [N, 1] ** [kPolyDegree].
torch::Tensor make_features_broadcast(const torch::Tensor& x) {
  return torch::pow(x, torch::arange(1, kPolyDegree + 1, torch::kFloat));
}

// The function to learn: features [N, 4] times W [4, 1] plus b.
torch::Tensor target_function(const torch::Tensor& features, const torch::Tensor& w,
                              const torch::Tensor& b) {
  return features.mm(w) + b.item();
}

std::string describe(const torch::Tensor& w, const torch::Tensor& b) {
  auto weights = w.view({-1});
  std::ostringstream out;
  out << "y = ";
  for (int64_t i = 0; i < weights.size(0); ++i) {
    out << weights[i].item<float>() << " x^" << (i + 1) << " + ";
  }
  out << b[0].item<float>();
  return out.str();
}

std::pair<torch::Tensor, torch::Tensor> get_batch(const torch::Tensor& w, const torch::Tensor& b) {
  auto x = torch::randn({kBatchSize, 1});
  auto features = make_features(x);
  return {features, target_function(features, w, b)};
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t max_batches = argc > 1 ? std::stoll(argv[1]) : 100000;
  try {
    torch::manual_seed(1);

    auto w_target = torch::randn({kPolyDegree, 1}) * 5;
    auto b_target = torch::randn({1}) * 5;

    {
      auto x = torch::randn({5, 1});
      auto stacked = torch::stack({x.squeeze(1), torch::pow(x, 2).squeeze(1),
                                   torch::pow(x, 3).squeeze(1), torch::pow(x, 4).squeeze(1)},
                                  /*dim=*/1);
      TORCH_CHECK(torch::allclose(make_features(x), make_features_broadcast(x)),
                  "pow/cat features differ from broadcast pow features");
      TORCH_CHECK(torch::allclose(make_features(x), stacked),
                  "pow/cat features differ from stacked features");
    }

    torch::nn::Linear fc(w_target.size(0), 1);
    torch::optim::SGD optimizer(fc->parameters(), 0.1);
    // The loss as a function value, so that one line can hand it to a compiler.
    std::function<torch::Tensor(torch::nn::LinearImpl&, torch::Tensor, torch::Tensor)> loss_of =
        [](torch::nn::LinearImpl& model, torch::Tensor x, torch::Tensor y) {
          return torch::smooth_l1_loss(model.forward(x), y);
        };
#ifdef KILN_COMPILE
    loss_of = torch::compile(loss_of);  // the one line a compiled run adds (Kiln's kiln::compile)
#endif

    float loss = 0;
    int64_t batch_idx = 0;
    while (true) {
      ++batch_idx;
      auto batch = get_batch(w_target, b_target);
      fc->zero_grad();
      auto output = loss_of(*fc, batch.first, batch.second);
      loss = output.item<float>();
      output.backward();
      optimizer.step();
      if (batch_idx % 100 == 0) {
        std::printf("batch %lld loss %.6f\n", static_cast<long long>(batch_idx), loss);
      }
      if (loss < 1e-3f || batch_idx >= max_batches) {
        break;
      }
    }

    std::cout << "Loss: " << loss << " after " << batch_idx << " batches" << std::endl;
    std::cout << "==> Learned function:\t" << describe(fc->weight, fc->bias) << std::endl;
    std::cout << "==> Actual function:\t" << describe(w_target, b_target) << std::endl;
    std::printf("RESULT loss=%.6f batches=%lld\n", loss, static_cast<long long>(batch_idx));
    if (!(loss < 1e-3f)) {
      std::cerr << "regression: did not converge in " << max_batches << " batches" << std::endl;
      return 1;
    }
  } catch (const c10::Error& e) {
    std::cerr << "regression: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
