// Data-dependent control flow and output shapes under kiln::compile (issue 21), in ms:
//   compiled_moe_top1_routing    a mixture-of-experts layer: 8 experts (linear 256 -> 256, relu),
//                                4096 tokens of d=256, each routed to its argmax expert with
//                                nonzero + index_select and written back with index_put_,
//                                scaled by its gate probability
//   compiled_while_loop_decode   greedy decoding with a 2-layer GRU-like cell (d=256, vocabulary
//                                1024, batch 1) for up to 64 steps, stopping early at an
//                                end token, written as kiln::while_loop
// `kiln` is the compiled function (one graph: nonzero's unbacked sizes, the loop's data-dependent
// trip count); refs: `kiln_eager` (the same code, not compiled), `kiln_graph_breaks` (the same
// model compiled as it would be without them: nonzero run eagerly in its own segment,
// capture_dynamic_output_shape_ops=false; the loop written in C++ around item(), a graph break
// per step) and `torch_eager` (bench/torch_eager.py). Each result's metadata counts the graphs
// of the compiled function and of the graph-break version.
//
// The end token of the decoder is one the weights never produce, so every variant runs all 64
// steps and the stop test runs on each (the times compare the same work).
#include <fmt/format.h>

#include "bench/bench.h"
#include "kiln/compile.h"
#include "kiln/control_flow.h"
#include "kiln/kiln.h"

namespace kiln::bench {
namespace {

constexpr int64_t kTokens = 4096, kDim = 256, kExperts = 8;

// Deterministic weights (the same formula as torch_eager.py's): values in [-0.5, 0.5) * scale.
Tensor weights(std::initializer_list<int64_t> sizes, double scale, int64_t salt) {
  std::vector<int64_t> shape(sizes);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return ((arange(n) * 7 + salt) % 101).to(kFloat32).sub(50).div(101).mul(scale).reshape(shape);
}

struct Moe {
  Tensor gate = weights({kDim, kExperts}, 0.2, 1);
  std::vector<Tensor> w, b;
  Moe() {
    for (int64_t e = 0; e < kExperts; ++e) {
      w.push_back(weights({kDim, kDim}, 0.1, 3 + e));
      b.push_back(weights({kDim}, 0.1, 11 + e));
    }
  }
};

Tensor moe_forward(const Moe& m, const Tensor& x) {
  const Tensor logits = x.matmul(m.gate);
  const Tensor probs = softmax(logits, 1);
  const Tensor expert = logits.argmax(1);
  Tensor out = zeros_like(x);
  for (int64_t e = 0; e < kExperts; ++e) {
    const Tensor rows = (expert == e).nonzero().squeeze(1);
    const Tensor y = relu(x.index_select(0, rows).matmul(m.w[e]) + m.b[e]) *
                     probs.index_select(0, rows).narrow(1, e, 1);
    index_put_(out, {rows}, y);
  }
  return out;
}

constexpr int64_t kVocab = 1024, kSteps = 64, kEndToken = kVocab;  // never produced

struct Decoder {
  Tensor embedding = weights({kVocab, kDim}, 1.0, 5);
  Tensor wx1 = weights({kDim, 3 * kDim}, 0.15, 7), wh1 = weights({kDim, 3 * kDim}, 0.15, 9);
  Tensor wx2 = weights({kDim, 3 * kDim}, 0.15, 13), wh2 = weights({kDim, 3 * kDim}, 0.15, 17);
  Tensor out = weights({kDim, kVocab}, 0.3, 19);
};

// A GRU cell: gates from one matmul of the input and one of the state.
Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& wx, const Tensor& wh) {
  const Tensor gx = x.matmul(wx), gh = h.matmul(wh);
  const Tensor r = sigmoid(gx.narrow(1, 0, kDim) + gh.narrow(1, 0, kDim));
  const Tensor z = sigmoid(gx.narrow(1, kDim, kDim) + gh.narrow(1, kDim, kDim));
  const Tensor n = tanh(gx.narrow(1, 2 * kDim, kDim) + r * gh.narrow(1, 2 * kDim, kDim));
  return (1 - z) * n + z * h;
}

// One decoding step: {token, h1, h2} -> the next ones.
std::vector<Tensor> decode_step(const Decoder& d, const Tensor& token, const Tensor& h1,
                                const Tensor& h2) {
  const Tensor x = d.embedding.index_select(0, token.view({1}));
  const Tensor h1_next = gru_cell(x, h1, d.wx1, d.wh1);
  const Tensor h2_next = gru_cell(h1_next, h2, d.wx2, d.wh2);
  const Tensor next = h2_next.matmul(d.out).argmax(1).view({});
  return {next, h1_next, h2_next};
}

// Carries: step count, token, the two states. Returns the last token and state.
std::vector<Tensor> decode_while_loop(const Decoder& d, const Tensor& start, const Tensor& h) {
  std::vector<Tensor> out =
      while_loop([](const std::vector<Tensor>& c) { return (c[0] < kSteps) & (c[1] != kEndToken); },
                 [&](const std::vector<Tensor>& c) {
                   std::vector<Tensor> next = decode_step(d, c[1], c[2], c[3]);
                   return std::vector<Tensor>{c[0] + 1, next[0], next[1], next[2]};
                 },
                 {zeros({}, kInt64), start, h, h});
  return {out[1], out[3]};
}

// The same loop in C++: the stop test reads the token (a graph break under kiln::compile).
std::vector<Tensor> decode_cpp_loop(const Decoder& d, const Tensor& start, const Tensor& h) {
  Tensor token = start, h1 = h, h2 = h;
  for (int64_t step = 0; step < kSteps && token.item<int64_t>() != kEndToken; ++step) {
    std::vector<Tensor> next = decode_step(d, token, h1, h2);
    token = next[0];
    h1 = next[1];
    h2 = next[2];
  }
  return {token, h2};
}

// Holds the outputs so they are not freed inside the timed region.
struct Sink {
  Tensor value;
};

Result moe_result(const Options& options) {
  const Moe m;
  const Tensor x = weights({kTokens, kDim}, 2.0, 23);
  auto fn = [&m](const Tensor& input) { return moe_forward(m, input); };
  auto compiled = compile(fn, {.backend = options.backend, .name = "compiled_moe_top1_routing"});
  CompileOptions breaking{.backend = options.backend, .name = "compiled_moe_top1_routing_breaks"};
  breaking.capture_dynamic_output_shape_ops = false;
  auto with_breaks = compile(fn, breaking);
  Sink sink;
  const double kiln_s = median_seconds([&] { sink.value = compiled(x); }, options.repetitions);
  const double breaks_s = median_seconds([&] { sink.value = with_breaks(x); }, options.repetitions);
  const double eager_s = median_seconds([&] { sink.value = fn(x); }, options.repetitions);
  Result r{"compiled_moe_top1_routing",
           "ms",
           kiln_s * 1e3,
           {{"kiln_eager", eager_s * 1e3}, {"kiln_graph_breaks", breaks_s * 1e3}}};
  r.metadata = {{"graphs", compiled.stats().graphs},
                {"graph_breaks", compiled.stats().graph_breaks},
                {"graphs_of_kiln_graph_breaks", with_breaks.stats().graphs}};
  return r;
}

Result decode_result(const Options& options) {
  const Decoder d;
  const Tensor start = scalar_tensor(int64_t{1}, kInt64);
  const Tensor h = zeros({1, kDim});
  auto loop = [&d](const Tensor& s, const Tensor& h0) { return decode_while_loop(d, s, h0); };
  auto cpp_loop = [&d](const Tensor& s, const Tensor& h0) { return decode_cpp_loop(d, s, h0); };
  auto compiled = compile(loop, {.backend = options.backend, .name = "compiled_while_loop_decode"});
  auto with_breaks =
      compile(cpp_loop, {.backend = options.backend, .name = "compiled_while_loop_decode_breaks"});
  Sink sink;
  const double kiln_s =
      median_seconds([&] { sink.value = compiled(start, h)[1]; }, options.repetitions);
  const double breaks_s =
      median_seconds([&] { sink.value = with_breaks(start, h)[1]; }, options.repetitions);
  const double eager_s =
      median_seconds([&] { sink.value = loop(start, h)[1]; }, options.repetitions);
  Result r{"compiled_while_loop_decode",
           "ms",
           kiln_s * 1e3,
           {{"kiln_eager", eager_s * 1e3}, {"kiln_graph_breaks", breaks_s * 1e3}}};
  r.metadata = {{"graphs", compiled.stats().graphs},
                {"graph_breaks", compiled.stats().graph_breaks},
                {"graphs_of_kiln_graph_breaks", with_breaks.stats().graphs},
                {"graph_breaks_of_kiln_graph_breaks", with_breaks.stats().graph_breaks}};
  return r;
}

}  // namespace

std::vector<Result> bench_control_flow(const Options& options) {
  NoGradGuard no_grad;  // inference, as torch_eager.py measures it (torch.no_grad)
  return {moe_result(options), decode_result(options)};
}

}  // namespace kiln::bench
