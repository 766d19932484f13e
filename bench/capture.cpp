// kiln::compile overheads, in ns:
//   guard_check_ns_per_tensor:  checking the guards of a cache entry, per guarded tensor (an MLP's
//                               input and its four parameters), measured on the entry the
//                               compile produced (src/capture/guards.h)
//   compiled_call_overhead_ns:  a cache hit of x -> x + 1 on 4 floats (eager backend) minus the
//                               same op eagerly: guards, input gathering, the graph interpreter
#include "bench/bench.h"
#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/capture/guards.h"

namespace kiln::bench {
namespace {

// The guard set of an MLP call built the way the tracer builds it: the input's sizes are a
// symbol (bound), the parameters' are static and checked for identity.
double guard_ns_per_tensor(int reps) {
  nn::Linear fc1(784, 512), fc2(512, 10);
  Tensor x = randn({64, 784});
  capture::SymbolTable symbols;
  capture::GuardSet guards;
  guards.grad_mode = true;
  auto tensor_guard = [](capture::InputRef where, const Tensor& t, bool symbolic_batch) {
    capture::TensorGuard g;
    g.where = std::move(where);
    g.dtype = t.dtype();
    g.requires_grad = t.requires_grad();
    g.contiguous = true;
    for (int64_t d = 0; d < t.dim(); ++d)
      g.sizes.push_back(
          d == 0 && symbolic_batch
              ? capture::TensorGuard::Dim{capture::TensorGuard::Dim::Kind::Bind, 0}
              : capture::TensorGuard::Dim{capture::TensorGuard::Dim::Kind::Static, t.sizes()[d]});
    return g;
  };
  symbols.symbols.push_back(nullptr);
  symbols.sources.push_back("arg1.size(0)");
  guards.tensors.push_back(
      tensor_guard({.kind = capture::InputRef::Kind::Arg, .index = 1, .source = "arg1"}, x, true));
  for (Tensor* p : {&fc1.weight, &fc1.bias, &fc2.weight, &fc2.bias}) {
    capture::TensorGuard g =
        tensor_guard({.kind = capture::InputRef::Kind::Slot, .slot = p, .source = "p"}, *p, false);
    g.identity = *p;
    guards.tensors.push_back(std::move(g));
  }
  guards.ranges.push_back({0, 2, INT64_MAX});
  std::vector<capture::ArgValue> args{static_cast<nn::Module*>(&fc1), x};
  std::vector<int64_t> values(1);
  constexpr int kInner = 10000;
  bool ok = true;
  const double s = median_seconds(
      [&] {
        for (int i = 0; i < kInner; ++i) ok &= capture::check_guards(guards, symbols, args, values);
      },
      reps);
  if (!ok) throw Error("bench: the guard set did not pass");
  return s / kInner / static_cast<double>(guards.tensors.size()) * 1e9;
}

double compiled_call_overhead_ns(int reps) {
  auto f = compile([](const Tensor& x) { return x + 1; });
  Tensor x = randn({4});
  f(x);
  constexpr int kInner = 2000;
  const double compiled = median_seconds(
      [&] {
        for (int i = 0; i < kInner; ++i) f(x);
      },
      reps);
  const double eager = median_seconds(
      [&] {
        for (int i = 0; i < kInner; ++i) x + 1;
      },
      reps);
  return (compiled - eager) / kInner * 1e9;
}

}  // namespace

std::vector<Result> bench_capture(const Options& options) {
  return {{"guard_check_ns_per_tensor", "ns", guard_ns_per_tensor(options.repetitions), {}},
          {"compiled_call_overhead_ns", "ns", compiled_call_overhead_ns(options.repetitions), {}}};
}

}  // namespace kiln::bench
