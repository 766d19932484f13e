// Later calls of a compiled fuzz function (Note [Later calls] in fuzz_runner.h).
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "kiln/compile.h"
#include "tests/fuzz/fuzz_runner.h"

namespace kiln::fuzz {
namespace {

// What one call gave for every program of a group: outputs, or the error it raised.
struct CallResult {
  std::vector<std::vector<Tensor>> outputs;  // per program
  std::string error;                         // "ShapeError: ..." when the call raised
};

std::string error_kind(const std::exception& e) {
  if (dynamic_cast<const ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const DTypeError*>(&e)) return "DTypeError";
  if (dynamic_cast<const IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const NotImplementedError*>(&e)) return "NotImplementedError";
  return "Error";
}

// The eager run of each program on its inputs; an error in any program is the group's error (the
// compiled function runs them all in one call).
CallResult run_eagerly(const std::vector<Program>& programs,
                       const std::vector<std::vector<Tensor>>& inputs, uint64_t rng_seed) {
  CallResult r;
  manual_seed(rng_seed);
  try {
    for (size_t p = 0; p < programs.size(); ++p)
      r.outputs.push_back(interpret(programs[p], inputs[p]));
  } catch (const std::exception& e) {
    r.outputs.clear();
    r.error = error_kind(e) + ": " + e.what();
  }
  return r;
}

// The compiled call of a group's function, its flat outputs split per program.
CallResult run_compiled(const std::vector<Program>& programs, capture::CompiledFunction& fn,
                        const std::vector<capture::ArgValue>& args, uint64_t rng_seed) {
  CallResult r;
  manual_seed(rng_seed);
  try {
    std::vector<Tensor> flat = fn.call(args);
    size_t next = 0;
    for (const Program& p : programs) {
      r.outputs.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(next),
                             flat.begin() + static_cast<std::ptrdiff_t>(next + p.outputs.size()));
      next += p.outputs.size();
    }
  } catch (const std::exception& e) {
    r.error = error_kind(e) + ": " + e.what();
  }
  return r;
}

// Inexact values of a later call are measured against that call's own magnitudes: new values
// or sizes may make them larger than the first call's scale.
ValueInfo later_info(const ValueInfo& first, const Tensor& eager) {
  ValueInfo info = first;
  if (info.exact || !is_floating(eager.dtype())) return info;
  for (double v : eager.to_vector<double>())
    if (std::isfinite(v)) info.scale = std::max(info.scale, std::abs(v));
  info.tol = std::max(info.tol, 1e-5) * 4;
  return info;
}

// Empty when the compiled call agrees with eager: the same outputs, or errors of the same kind.
std::string compare_calls(const std::vector<Program>& programs, const CallResult& eager,
                          const CallResult& compiled, size_t p) {
  if (!eager.error.empty()) {
    if (compiled.error.empty()) return "eager raised " + eager.error + "; compiled did not";
    const std::string kind = eager.error.substr(0, eager.error.find(':'));
    // In a group, eager raises at the first program that fails when run, the compiled call at
    // the first one that fails when traced (shapes) or run (values): both raising agrees, and
    // the kinds are compared when a program runs alone (--programs-per-compile 1).
    if (compiled.error.rfind(kind, 0) == 0 || programs.size() > 1) return "";
    return "eager raised " + eager.error + "; compiled raised " + compiled.error;
  }
  if (!compiled.error.empty()) return "compiled raised " + compiled.error;
  const Program& program = programs[p];
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const ValueInfo& first = program.values.at(static_cast<size_t>(program.outputs[i]));
    const std::string diff = compare_value(compiled.outputs[p][i], eager.outputs[p][i],
                                           later_info(first, eager.outputs[p][i]));
    if (!diff.empty()) return fmt::format("output {} (%{}): {}", i, program.outputs[i], diff);
  }
  return "";
}

// The input specs of a later call.
using SpecChange = std::function<InputSpec(const InputSpec&)>;

// New values: another data seed, the same kind of values (zeros among integer divisors now
// happen, and eager and compiled must then raise alike).
InputSpec fresh_values(const InputSpec& spec, uint64_t salt) {
  InputSpec s = spec;
  s.data_seed = spec.data_seed * 0x9E3779B97F4A7C15ull + salt;
  return s;
}

// Every size changed by one map, so that equal sizes stay equal and 1 stays 1 (broadcasting is
// kept); sizes may become 1.
std::map<int64_t, int64_t> size_map(const std::vector<Program>& programs, std::mt19937_64& rng) {
  std::set<int64_t> sizes;
  for (const Program& p : programs)
    for (const InputSpec& in : p.inputs) sizes.insert(in.shape.begin(), in.shape.end());
  std::map<int64_t, int64_t> m;
  for (int64_t s : sizes) {
    if (s <= 1) {
      m[s] = s;
      continue;
    }
    const int64_t choices[] = {1, 2, 3, s + 1, s - 1, s};
    m[s] = std::max<int64_t>(choices[rng() % 6], 1);
  }
  return m;
}

// Inputs that overlap: all inputs of one dtype are views into one storage, each at a small
// offset from the last, with its own sizes (contiguous strides).
std::vector<std::vector<Tensor>> overlapping_inputs(const std::vector<Program>& programs,
                                                    uint64_t salt) {
  std::map<ScalarType, std::pair<Tensor, int64_t>> bases;  // dtype -> (storage, next offset)
  std::vector<std::vector<Tensor>> out;
  for (const Program& p : programs) {
    out.emplace_back();
    for (const InputSpec& spec : p.inputs) {
      InputSpec contiguous = fresh_values(spec, salt);
      contiguous.layout = InputLayout::Contiguous;
      Tensor values = make_input(contiguous);
      auto& [base, offset] = bases[spec.dtype];
      if (!base.defined()) base = empty({4096}, spec.dtype);
      if (offset + values.numel() > base.numel()) offset = 0;
      Tensor view = base.narrow(0, offset, values.numel()).view(SymIntArrayRef(spec.shape));
      view.copy_(values);
      offset += std::max<int64_t>(values.numel() / 2, 1);  // the next input overlaps this one
      out.back().push_back(view);
    }
  }
  return out;
}

}  // namespace

// Note [Later calls] (fuzz_runner.h).
void check_later_calls(const std::vector<Program>& programs, capture::CompiledFunction& fn,
                       uint64_t rng_seed, std::vector<std::string>& mismatches) {
  std::mt19937_64 rng(programs.front().seed * 31 + static_cast<uint64_t>(programs.front().index));
  const std::map<int64_t, int64_t> sizes = size_map(programs, rng);
  const std::vector<std::pair<std::string, SpecChange>> changes = {
      {"fresh values", [](const InputSpec& s) { return fresh_values(s, 1); }},
      {"new sizes",
       [&](const InputSpec& s) {
         InputSpec r = fresh_values(s, 2);
         for (int64_t& d : r.shape) d = sizes.at(d);
         return r;
       }},
      {"the first values again", [](const InputSpec& s) { return s; }},
  };
  auto make = [&](const SpecChange& change) {
    std::vector<std::vector<Tensor>> inputs;
    for (const Program& p : programs) {
      inputs.emplace_back();
      for (const InputSpec& spec : p.inputs) inputs.back().push_back(make_input(change(spec)));
    }
    return inputs;
  };
  auto check = [&](const std::string& what, const std::vector<std::vector<Tensor>>& eager_in,
                   const std::vector<std::vector<Tensor>>& compiled_in) {
    const CallResult eager = run_eagerly(programs, eager_in, rng_seed + 1);
    std::vector<capture::ArgValue> args;
    for (const auto& in : compiled_in) args.insert(args.end(), in.begin(), in.end());
    const CallResult compiled = run_compiled(programs, fn, args, rng_seed + 1);
    for (size_t p = 0; p < programs.size(); ++p) {
      if (!mismatches[p].empty()) continue;
      const std::string diff = compare_calls(programs, eager, compiled, p);
      if (!diff.empty()) mismatches[p] = fmt::format("a later call with {}: {}", what, diff);
    }
  };
  for (const auto& [what, change] : changes) check(what, make(change), make(change));
  check("inputs that overlap in memory", overlapping_inputs(programs, 3),
        overlapping_inputs(programs, 3));
}

namespace {

// The inputs of a group as an nn::Module's buffers, "p<program>_<input>".
struct InputHolder : nn::Module {
  explicit InputHolder(const std::vector<std::vector<Tensor>>& inputs) : Module("FuzzInputs") {
    for (size_t p = 0; p < inputs.size(); ++p)
      for (size_t i = 0; i < inputs[p].size(); ++i)
        register_buffer(fmt::format("p{}_{}", p, i), inputs[p][i]);
  }
};

}  // namespace

void check_module_swap(const std::vector<Program>& programs, const RunOptions& options,
                       uint64_t rng_seed, std::vector<std::string>& mismatches) {
  CompileOptions o;
  o.backend = options.backend;
  if (options.dynamic) o.dynamic = true;
  o.name = fmt::format("fuzz module swap seed={} index={}..{}", programs.front().seed,
                       programs.front().index, programs.back().index);
  capture::CompiledFunction fn(
      [&programs](const std::vector<capture::ArgValue>& boxed) {
        const auto buffers = std::get<nn::Module*>(boxed.at(0))->named_buffers();
        std::vector<Tensor> outputs;
        size_t next = 0;
        for (const Program& p : programs) {
          std::vector<Tensor> inputs;
          for (size_t i = 0; i < p.inputs.size(); ++i) inputs.push_back(buffers.at(next++).second);
          for (Tensor& t : interpret(p, inputs)) outputs.push_back(std::move(t));
        }
        return outputs;
      },
      o, std::source_location::current());
  auto inputs_with = [&](uint64_t salt) {
    std::vector<std::vector<Tensor>> inputs;
    for (const Program& p : programs) {
      inputs.emplace_back();
      for (const InputSpec& spec : p.inputs)
        inputs.back().push_back(make_input(salt == 0 ? spec : fresh_values(spec, salt)));
    }
    return inputs;
  };
  auto check = [&](const std::string& what, InputHolder& module,
                   const std::vector<std::vector<Tensor>>& eager_in) {
    const CallResult eager = run_eagerly(programs, eager_in, rng_seed + 2);
    const CallResult compiled =
        run_compiled(programs, fn, {static_cast<nn::Module*>(&module)}, rng_seed + 2);
    for (size_t p = 0; p < programs.size(); ++p) {
      if (!mismatches[p].empty()) continue;
      const std::string diff = compare_calls(programs, eager, compiled, p);
      if (!diff.empty()) mismatches[p] = fmt::format("a module argument, {}: {}", what, diff);
    }
  };
  InputHolder a(inputs_with(0)), b(inputs_with(4));
  check("the first module", a, inputs_with(0));
  check("a second module (a module swap)", b, inputs_with(4));
  // The first module's buffers updated in place: the cached graph reads them through its slots.
  const std::vector<std::vector<Tensor>> updated = inputs_with(5);
  size_t next = 0;
  const auto buffers = a.named_buffers();
  for (const auto& program_inputs : updated)
    for (const Tensor& t : program_inputs) buffers.at(next++).second.copy_(t);
  check("the first module again, its buffers updated in place", a, inputs_with(5));
}

}  // namespace kiln::fuzz
