// The op harness, compiled (issue 19): every OpInfo sample of every op also runs through
// kiln::compile with the code-generating backend, and must give what the op gives eagerly:
// the same outputs (Note [Compiled tolerances] in tests/capture/compare.h) and the same in-place
// updates of its inputs, or the same kind of error. So a difference between compiled and eager
// code (a lowering that rounds, overflows or indexes differently) cannot come back unnoticed.
//
// One compiled function per op runs all of its samples, every dtype, as one graph, so that each
// op costs one C++ compile; when that graph differs from eager, each sample is compiled alone to
// name the ones that differ.
#include <gtest/gtest.h>

#include <cstring>

#include "kiln/compile.h"
#include "src/core/shape.h"
#include "tests/capture/compare.h"
#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

struct Sample {
  Stack args;
  std::string description;  // "float32 non-contiguous [3, 4]"
  std::pair<double, double> tolerance;
  bool compare_values = true;
};

// A copy of `t` with its sizes, strides and offset (a sample's layout is part of the case).
Tensor copy_with_layout(const Tensor& t) {
  if (!t.defined()) return t;
  const StorageImpl* storage = t.impl()->storage().get();
  const auto n = static_cast<int64_t>(storage->nbytes()) / t.element_size();
  Tensor flat = empty({n}, t.dtype());
  if (n > 0)
    std::memcpy(flat.data_ptr(), storage->data(), static_cast<size_t>(n * t.element_size()));
  std::vector<SymInt> sizes(t.sizes().begin(), t.sizes().end());
  std::vector<SymInt> strides(t.strides().begin(), t.strides().end());
  Tensor copy = flat.as_strided(sizes, strides, SymInt(t.storage_offset()));
  copy.impl()->set_wrapped_number(t.impl()->is_wrapped_number());
  return copy;
}

Stack copy_stack(const Stack& args) {
  Stack out;
  for (const IValue& v : args) {
    if (v.is_tensor()) {
      out.emplace_back(copy_with_layout(v.tensor()));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> list;
      for (const Tensor& t : v.tensor_list()) list.push_back(copy_with_layout(t));
      out.emplace_back(std::move(list));
    } else {
      out.push_back(v);
    }
  }
  return out;
}

// The tensors of a stack, in order, as the compiled function's arguments.
void append_tensor_args(const Stack& args, std::vector<capture::ArgValue>& out) {
  for (const IValue& v : args) {
    if (v.is_tensor()) out.emplace_back(v.tensor());
    if (v.is_tensor_list())
      for (const Tensor& t : v.tensor_list()) out.emplace_back(t);
  }
}

// `args` with its tensors replaced, in order, by in[next...].
Stack with_tensors(const Stack& args, const std::vector<capture::ArgValue>& in, size_t& next) {
  Stack out;
  for (const IValue& v : args) {
    if (v.is_tensor()) {
      out.emplace_back(std::get<Tensor>(in[next++]));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> list;
      for (size_t k = 0; k < v.tensor_list().size(); ++k)
        list.push_back(std::get<Tensor>(in[next++]));
      out.emplace_back(std::move(list));
    } else {
      out.push_back(v);
    }
  }
  return out;
}

std::string error_kind(const std::exception& e) {
  if (dynamic_cast<const ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const DTypeError*>(&e)) return "DTypeError";
  if (dynamic_cast<const IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const NotImplementedError*>(&e)) return "NotImplementedError";
  if (dynamic_cast<const Error*>(&e)) return "Error";
  return "std::exception";
}

// What one run of some samples gave: per sample, its outputs and its (updated) tensor args, or
// the error it raised.
struct Outcome {
  std::vector<std::vector<Tensor>> outputs;
  std::vector<Stack> args;
  std::string error;  // "ValueError: message" when the run raised
};

Outcome run_eagerly(const OpDef& op, const Sample& sample) {
  Outcome o;
  o.args.push_back(copy_stack(sample.args));
  try {
    o.outputs.push_back(tensors_of(dispatch::call(op.id, o.args.back())));
  } catch (const std::exception& e) {
    o.error = error_kind(e) + ": " + e.what();
  }
  return o;
}

Outcome run_compiled(const OpDef& op, const std::vector<const Sample*>& samples) {
  Outcome o;
  std::vector<capture::ArgValue> in;
  for (const Sample* s : samples) {
    o.args.push_back(copy_stack(s->args));
    append_tensor_args(o.args.back(), in);
  }
  std::vector<size_t> counts;  // outputs per sample
  capture::CompiledFunction::Body body = [&](const std::vector<capture::ArgValue>& values) {
    std::vector<Tensor> results;
    counts.clear();
    size_t next = 0;
    for (const Sample* s : samples) {
      Stack args = with_tensors(s->args, values, next);
      std::vector<Tensor> out = tensors_of(dispatch::call(op.id, args));
      counts.push_back(out.size());
      for (Tensor& t : out) results.push_back(t.defined() ? t : Tensor());
    }
    return results;
  };
  CompileOptions options;
  options.backend = "inductor";
  options.name = "op harness " + op.name;
  options.verify = false;  // compared with eager right here
  capture::CompiledFunction f(body, options, std::source_location::current());
  try {
    std::vector<Tensor> flat = f.call(in);
    size_t k = 0;
    for (size_t c : counts) {
      o.outputs.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(k),
                             flat.begin() + static_cast<std::ptrdiff_t>(k + c));
      k += c;
    }
  } catch (const std::exception& e) {
    o.error = error_kind(e) + ": " + e.what();
  }
  return o;
}

// Empty when sample `i` of `compiled` matches `eager` (a one-sample run).
std::string difference(const Sample& sample, const Outcome& eager, const Outcome& compiled,
                       size_t i) {
  if (!eager.error.empty()) {
    if (compiled.error.empty()) return "eager raised " + eager.error + ", compiled did not";
    const std::string kind = eager.error.substr(0, eager.error.find(':'));
    return compiled.error.rfind(kind, 0) == 0
               ? ""
               : "eager raised " + eager.error + ", compiled " + compiled.error;
  }
  if (!compiled.error.empty()) return "compiled raised " + compiled.error;
  const auto [atol, rtol] = sample.tolerance;
  auto compare = [&](const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                     const char* what) -> std::string {
    if (got.size() != want.size())
      return fmt::format("{} {} where eager has {}", got.size(), what, want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      if (!want[k].defined() && !got[k].defined()) continue;
      if (want[k].defined() != got[k].defined())
        return fmt::format("{} {}: one is undefined", what, k);
      const double tol = compiled_tolerance(want[k].dtype());
      if (!sample.compare_values) {
        if (got[k].dtype() != want[k].dtype() || got[k].sizes() != want[k].sizes())
          return fmt::format("{} {}: {} {} where eager gives {} {}", what, k,
                             dtype_name(got[k].dtype()), shape_str(got[k].sym_sizes()),
                             dtype_name(want[k].dtype()), shape_str(want[k].sym_sizes()));
        continue;
      }
      const std::string diff =
          compare_tensors(got[k], want[k], std::max(atol, tol), std::max(rtol, tol));
      if (!diff.empty()) return fmt::format("{} {}: {}", what, k, diff);
    }
    return "";
  };
  std::string d = compare(compiled.outputs[i], eager.outputs[0], "output");
  if (d.empty()) d = compare(tensors_of(compiled.args[i]), tensors_of(eager.args[0]), "argument");
  return d;
}

std::vector<Sample> samples_of(const OpDef& op, const OpInfo& info) {
  std::mt19937_64 rng(std::hash<std::string>{}(op.name) + 1);
  std::vector<Sample> samples;
  for (ScalarType dtype : kAllScalarTypes) {
    if (!op.dtypes.contains(dtype)) continue;
    const auto tolerance = info.tolerance ? info.tolerance(dtype) : default_tolerance(dtype);
    for (SampleInput& s : info.samples(dtype, rng))
      samples.push_back({std::move(s.args), fmt::format("{} {}", dtype_name(dtype), s.description),
                         tolerance, info.compare_values});
  }
  return samples;
}

class CompiledOpHarness : public ::testing::TestWithParam<std::string> {};

TEST_P(CompiledOpHarness, CompiledMatchesEager) {
  const std::string& name = GetParam();
  const OpInfo* info = find_op_info(name);
  if (info == nullptr) GTEST_SKIP() << exemption_reason(name);
  const OpDef& op = OpRegistry::instance().get(op_id(name));
  const std::vector<Sample> samples = samples_of(op, *info);
  ASSERT_FALSE(samples.empty());
  std::vector<Outcome> eager;
  std::vector<const Sample*> batch;
  for (const Sample& s : samples) {
    eager.push_back(run_eagerly(op, s));
    if (eager.back().error.empty()) batch.push_back(&s);  // errors are compared one by one
  }
  bool batch_agrees = false;
  if (!batch.empty()) {
    const Outcome compiled = run_compiled(op, batch);
    batch_agrees = compiled.error.empty();
    for (size_t i = 0, j = 0; batch_agrees && i < samples.size(); ++i) {
      if (!eager[i].error.empty()) continue;
      batch_agrees = difference(samples[i], eager[i], compiled, j++).empty();
    }
  }
  for (size_t i = 0; i < samples.size(); ++i) {
    if (batch_agrees && eager[i].error.empty()) continue;
    const std::string d = difference(samples[i], eager[i], run_compiled(op, {&samples[i]}), 0);
    EXPECT_EQ(d, "") << name << " sample " << samples[i].description;
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, CompiledOpHarness, ::testing::ValuesIn(all_op_names()),
                         [](const auto& info) { return op_test_name(info.param); });

}  // namespace
}  // namespace kiln::testing
