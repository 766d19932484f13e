// Compiled-versus-eager checking, minimization and batches. See fuzz_runner.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <ostream>

#include "kiln/compile.h"
#include "tests/fuzz/fuzz_runner.h"

namespace kiln::fuzz {

std::string backend_from_environment() {
  const char* env = std::getenv("KILN_FUZZ_BACKEND");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kDefaultFuzzBackend);
}

namespace {

// "[1, 0, 2]": the multi-index of flat (row-major) element i of `shape`.
std::string index_text(int64_t i, IntArrayRef shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t s = std::max<int64_t>(shape[d], 1);
    idx[d] = i % s;
    i /= s;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

template <typename T>
bool same_bits(T a, T e) {
  if constexpr (is_floating_v<T>) {
    const double x = static_cast<double>(static_cast<opmath_t<T>>(a));
    const double y = static_cast<double>(static_cast<opmath_t<T>>(e));
    return (std::isnan(x) && std::isnan(y)) || x == y;
  } else {
    return a == e;
  }
}

template <typename T>
std::string value_text(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (is_floating_v<T>) {
    return fmt::format("{}", static_cast<double>(static_cast<opmath_t<T>>(v)));
  } else {
    return fmt::format("{}", v);
  }
}

// The kiln-fuzz flags that reproduce `options` beyond seed, index and backend.
std::string extra_flags(const RunOptions& options) {
  const GeneratorOptions defaults;
  std::string flags;
  if (options.dynamic) flags += " --dynamic";
  if (options.grad) flags += " --grad";
  if (!options.later_calls) flags += " --no-later-calls";
  if (options.generator.random_ops) flags += " --random";
  if (!options.generator.special_values) flags += " --no-special";
  if (options.generator.max_steps != defaults.max_steps)
    flags += fmt::format(" --max-steps {}", options.generator.max_steps);
  return flags;
}

}  // namespace

std::string compare_value(const Tensor& compiled, const Tensor& eager, const ValueInfo& info) {
  if (!compiled.defined() || !eager.defined())
    return fmt::format("compiled defined: {}, eager defined: {}", compiled.defined(),
                       eager.defined());
  if (compiled.dtype() != eager.dtype())
    return fmt::format("dtype: compiled {}, eager {}", dtype_name(compiled.dtype()),
                       dtype_name(eager.dtype()));
  if (compiled.sizes().vec() != eager.sizes().vec())
    return fmt::format("shape: compiled [{}], eager [{}]", fmt::join(compiled.sizes(), ", "),
                       fmt::join(eager.sizes(), ", "));
  const IntArrayRef shape = eager.sizes();
  if (info.exact || !is_floating(eager.dtype())) {
    return visit_dtype(eager.dtype(), [&]<typename T>() -> std::string {
      const std::vector<T> a = compiled.to_vector<T>(), e = eager.to_vector<T>();
      for (size_t i = 0; i < a.size(); ++i) {
        if (!same_bits(a[i], e[i]))
          return fmt::format("element {}: compiled {}, eager {} (must be equal: {} value)",
                             index_text(static_cast<int64_t>(i), shape), value_text(a[i]),
                             value_text(e[i]), is_floating(eager.dtype()) ? "exact" : "integer");
      }
      return "";
    });
  }
  const std::vector<double> a = compiled.to_vector<double>(), e = eager.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    const bool nonfinite = !std::isfinite(a[i]) || !std::isfinite(e[i]);
    const double allowed = info.tol * (std::abs(e[i]) + info.scale);
    const bool ok = nonfinite ? ((std::isnan(a[i]) && std::isnan(e[i])) || a[i] == e[i])
                              : std::abs(a[i] - e[i]) <= allowed;
    if (!ok)
      return fmt::format(
          "element {}: compiled {}, eager {}, difference {:.3g} > allowed {:.3g} (tol {:.2g} * "
          "(|eager| + scale {:.3g}))",
          index_text(static_cast<int64_t>(i), shape), a[i], e[i], std::abs(a[i] - e[i]), allowed,
          info.tol, info.scale);
  }
  return "";
}

bool differentiable(ScalarType t) { return t == kFloat32 || t == kFloat64; }

int64_t g_gradient_checks = 0;  // programs whose gradients check_gradients compared

// The fuzzer's loss: sum over the floating outputs that carry a gradient of out * w, with w a
// fixed pattern of the output's shape (so every element's gradient differs).
Tensor weighted_loss(const std::vector<Tensor>& outputs) {
  Tensor loss = zeros({}, kFloat64);
  for (const Tensor& out : outputs) {
    if (!out.defined() || !out.requires_grad() || !differentiable(out.dtype())) continue;
    const Tensor w = (arange(out.numel()) % 7).to(kFloat64).view(out.sizes().vec()) * 0.25 - 0.75;
    loss = loss + (out.to(kFloat64) * w).sum();
  }
  return loss;
}

std::vector<Tensor> grad_inputs(const Program& program, std::vector<Tensor>& inputs) {
  std::vector<Tensor> wrt;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!differentiable(inputs[i].dtype())) continue;
    inputs[i] = inputs[i].contiguous().clone().requires_grad_();
    wrt.push_back(inputs[i]);
  }
  return wrt;
}

// Gradients through the compiled backward against eager autograd's (RunOptions::grad).
void check_gradients(const std::vector<Program>& programs, const RunOptions& options,
                     std::vector<std::string>& mismatches) {
  for (size_t p = 0; p < programs.size(); ++p) {
    if (!mismatches[p].empty()) continue;
    const Program& program = programs[p];
    std::vector<Tensor> eager_in = make_inputs(program);
    std::vector<Tensor> wrt = grad_inputs(program, eager_in);
    if (wrt.empty()) continue;
    std::vector<Tensor> expected;
    try {
      manual_seed(rng_seed_of(program));
      Tensor loss = weighted_loss(interpret(program, eager_in));
      if (!loss.requires_grad()) continue;
      expected = kiln::grad({loss}, wrt, {}, std::nullopt, false, /*allow_unused=*/true);
    } catch (const std::exception&) {
      continue;  // eager autograd cannot differentiate this program: nothing to compare
    }
    g_gradient_checks += 1;
    std::vector<Tensor> compiled_in = make_inputs(program);
    std::vector<Tensor> compiled_wrt = grad_inputs(program, compiled_in);
    std::vector<capture::ArgValue> args(compiled_in.begin(), compiled_in.end());
    CompileOptions o;
    o.backend = options.backend;
    if (options.dynamic) o.dynamic = true;
    o.name = fmt::format("fuzz gradients seed={} index={}", program.seed, program.index);
    std::vector<Tensor> actual;
    try {
      capture::CompiledFunction fn(
          [&program](const std::vector<capture::ArgValue>& boxed) {
            std::vector<Tensor> inputs;
            for (const capture::ArgValue& a : boxed) inputs.push_back(std::get<Tensor>(a));
            return interpret(program, inputs);
          },
          o, std::source_location::current());
      manual_seed(rng_seed_of(program));
      Tensor loss = weighted_loss(fn.call(args));
      actual = kiln::grad({loss}, compiled_wrt, {}, std::nullopt, false, /*allow_unused=*/true);
    } catch (const std::exception& e) {
      mismatches[p] = fmt::format("compiled gradient ({}) raised: {}", options.backend, e.what());
      continue;
    }
    for (size_t i = 0; i < expected.size() && mismatches[p].empty(); ++i) {
      // An input the loss does not reach gets no gradient from eager autograd; the compiled
      // backward leaves out the branches of outputs the loss ignores (Note [Absent tangents]),
      // but a region computes a gradient for every input it differentiates, zeros here.
      if (!expected[i].defined() && actual[i].defined() &&
          actual[i].abs().sum().item<double>() == 0)
        continue;
      if (expected[i].defined() != actual[i].defined()) {
        mismatches[p] = fmt::format("gradient {}: defined eager {}, compiled {}", i,
                                    expected[i].defined(), actual[i].defined());
        continue;
      }
      if (!expected[i].defined()) continue;
      // Wrong gradients, not rounding: the error is measured against the gradient's largest
      // magnitude (at least 1: gradients that cancel to about zero differ by the rounding of
      // their terms), with 1e-3 whatever the input's dtype (its gradient may have passed through
      // float32 ops).
      double scale = 1;
      for (double v : expected[i].to_vector<double>())
        if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
      const ValueInfo info{
          .dtype = expected[i].dtype(), .exact = false, .scale = scale, .tol = 1e-3};
      const std::string diff = compare_value(actual[i], expected[i], info);
      if (!diff.empty()) mismatches[p] = fmt::format("gradient of input {}: {}", i, diff);
    }
  }
}

std::vector<std::string> check_programs(const std::vector<Program>& programs,
                                        const RunOptions& options) {
  std::vector<std::string> mismatches(programs.size());
  std::vector<std::vector<Tensor>> expected(programs.size());
  const uint64_t rng_seed = rng_seed_of(programs.front());
  manual_seed(rng_seed);  // Note [Random steps]: the same numbers for eager and compiled
  for (size_t p = 0; p < programs.size(); ++p) {
    try {
      expected[p] = interpret(programs[p], make_inputs(programs[p]));
    } catch (const std::exception& e) {
      mismatches[p] =
          fmt::format("eager raised (the generator only keeps programs that run): {}", e.what());
    }
  }

  // One function of all the programs' inputs, returning all their outputs.
  std::vector<std::vector<Tensor>> compiled_inputs;
  std::vector<capture::ArgValue> args;
  for (const Program& p : programs) {
    compiled_inputs.push_back(make_inputs(p));
    args.insert(args.end(), compiled_inputs.back().begin(), compiled_inputs.back().end());
  }
  CompileOptions compile_options;
  compile_options.backend = options.backend;
  if (options.dynamic) compile_options.dynamic = true;
  compile_options.name = fmt::format("fuzz programs seed={} index={}..{}", programs.front().seed,
                                     programs.front().index, programs.back().index);
  std::vector<Tensor> actual;
  std::optional<capture::CompiledFunction> fn;
  try {
    fn.emplace(
        [&programs](const std::vector<capture::ArgValue>& boxed) {
          std::vector<Tensor> outputs;
          size_t next = 0;
          for (const Program& p : programs) {
            std::vector<Tensor> inputs;
            for (size_t i = 0; i < p.inputs.size(); ++i)
              inputs.push_back(std::get<Tensor>(boxed.at(next++)));
            for (Tensor& t : interpret(p, inputs)) outputs.push_back(std::move(t));
          }
          return outputs;
        },
        compile_options, std::source_location::current());
    manual_seed(rng_seed);
    actual = fn->call(args);
  } catch (const std::exception& e) {
    for (std::string& m : mismatches)
      if (m.empty()) m = fmt::format("compiled ({}) raised: {}", options.backend, e.what());
    return mismatches;
  }

  size_t total = 0;
  for (const Program& p : programs) total += p.outputs.size();
  if (actual.size() != total) {
    for (std::string& m : mismatches)
      if (m.empty())
        m = fmt::format("compiled returned {} outputs, eager {}", actual.size(), total);
    return mismatches;
  }
  size_t next = 0;
  for (size_t p = 0; p < programs.size(); ++p) {
    const Program& program = programs[p];
    for (size_t i = 0; i < program.outputs.size(); ++i, ++next) {
      if (!mismatches[p].empty()) continue;
      const ValueId v = program.outputs[i];
      const std::string diff =
          compare_value(actual[next], expected[p][i], program.values.at(static_cast<size_t>(v)));
      if (!diff.empty()) mismatches[p] = fmt::format("output {} (%{}): {}", i, v, diff);
    }
    // The programs never write to their inputs: the compiled call must not either.
    for (size_t i = 0; i < program.inputs.size() && mismatches[p].empty(); ++i) {
      const std::string diff = compare_value(compiled_inputs[p][i], make_input(program.inputs[i]),
                                             ValueInfo{.exact = true});
      if (!diff.empty())
        mismatches[p] = fmt::format("input %{} was modified by the compiled call: {}",
                                    program.inputs[i].id, diff);
    }
  }
  if (options.later_calls) {
    check_later_calls(programs, *fn, rng_seed, mismatches);
    if (programs.front().index % 32 < 8) check_module_swap(programs, options, rng_seed, mismatches);
  }
  if (options.grad) check_gradients(programs, options, mismatches);
  return mismatches;
}

uint64_t rng_seed_of(const Program& first) {
  return first.seed * 7919 + static_cast<uint64_t>(first.index);
}

std::string check_program(const Program& program, const RunOptions& options) {
  return check_programs({program}, options).front();
}

Program minimize(const Program& program, const std::function<bool(const Program&)>& fails) {
  Program best = program;
  if (best.outputs.size() > 1) {
    for (ValueId v : program.outputs) {
      Program candidate = best.pruned({v});
      if (fails(candidate)) {
        best = std::move(candidate);
        break;
      }
    }
  }
  // The earliest single value that still fails: each try keeps only what that value needs.
  for (bool improved = true; improved;) {
    improved = false;
    for (const Step& step : best.steps) {
      Program candidate = best.pruned({step.outputs.front()});
      if (candidate.steps.size() < best.steps.size() && fails(candidate)) {
        best = std::move(candidate);
        improved = true;
        break;
      }
    }
  }
  return best;
}

std::string failure_report(const Program& program, const std::string& mismatch,
                           const RunOptions& options) {
  std::string report = fmt::format(
      "FUZZ MISMATCH seed={} index={} backend={}\n  {}\n  rerun: kiln-fuzz --seed {} --index {} "
      "--backend {}{} --verbose\n{}",
      program.seed, program.index, options.backend, mismatch, program.seed, program.index,
      options.backend, extra_flags(options), program.to_text());
  if (options.minimize) {
    std::string last;
    Program small = minimize(program, [&](const Program& p) {
      std::string m = check_program(p, options);
      if (!m.empty()) last = m;
      return !m.empty();
    });
    if (small.steps.size() < program.steps.size() || small.outputs.size() < program.outputs.size())
      report += fmt::format("minimized ({} of {} steps):\n  {}\n{}", small.steps.size(),
                            program.steps.size(), last, small.to_text());
  }
  return report;
}

BatchResult run_batch(uint64_t seed, int64_t start, int64_t count, const RunOptions& options,
                      std::ostream* log, bool verbose) {
  BatchResult result;
  const auto begin = std::chrono::steady_clock::now();
  const int64_t gradient_checks_before = g_gradient_checks;
  const int64_t group = std::max(options.programs_per_compile, 1);
  for (int64_t first = start; first < start + count; first += group) {
    std::vector<Program> programs;
    for (int64_t i = first; i < std::min(first + group, start + count); ++i) {
      programs.push_back(generate(seed, i, options.generator));
      result.programs += 1;
      result.steps += static_cast<int64_t>(programs.back().steps.size());
    }
    const std::vector<std::string> mismatches = check_programs(programs, options);
    bool any_alone = false;
    for (size_t p = 0; p < programs.size(); ++p) {
      if (mismatches[p].empty()) {
        if (log && verbose) *log << programs[p].to_text() << "  ok\n" << std::flush;
        continue;
      }
      // Compiled alone, so that the report is about this program only.
      const std::string alone =
          programs.size() == 1 ? mismatches[p] : check_program(programs[p], options);
      if (alone.empty()) continue;
      any_alone = true;
      result.failures.push_back(failure_report(programs[p], alone, options));
      if (log) *log << result.failures.back() << std::flush;
    }
    if (!any_alone && programs.size() > 1) {
      for (size_t p = 0; p < programs.size(); ++p) {
        if (mismatches[p].empty()) continue;
        // Each program passes alone but not compiled together with the others.
        result.failures.push_back(fmt::format(
            "FUZZ MISMATCH seed={} index={} backend={} only when compiled together with "
            "programs {}..{} (rerun: kiln-fuzz --seed {} --start {} --count {} "
            "--programs-per-compile {} --backend {}{})\n  {}\n{}",
            seed, programs[p].index, options.backend, programs.front().index, programs.back().index,
            seed, programs.front().index, programs.size(), group, options.backend,
            extra_flags(options), mismatches[p], programs[p].to_text()));
        if (log) *log << result.failures.back() << std::flush;
      }
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  result.gradient_checks = g_gradient_checks - gradient_checks_before;
  return result;
}

Coverage coverage_of(const std::vector<Program>& programs) {
  Coverage c;
  for (const Program& p : programs) {
    c.max_steps = std::max(c.max_steps, static_cast<int>(p.steps.size()));
    for (const InputSpec& in : p.inputs) {
      c.input_dtypes[in.dtype] += 1;
      c.layouts[in.layout] += 1;
    }
    for (const Step& s : p.steps) c.ops[s.op] += 1;
    for (const ValueInfo& v : p.values) {
      c.value_dtypes[v.dtype] += 1;
      int64_t n = 1;
      for (int64_t s : v.shape) {
        n *= s;
        c.size_one_dims += s == 1;
      }
      c.zero_size_values += n == 0;
      c.non_finite_values += v.non_finite;
    }
    for (ValueId v : p.outputs) c.inexact_outputs += !p.values.at(static_cast<size_t>(v)).exact;
  }
  return c;
}

std::string Coverage::summary() const {
  std::string s = fmt::format("{} ops used:", ops.size());
  for (const auto& [op, n] : ops) s += fmt::format(" {}:{}", op, n);
  s += "\ninput dtypes:";
  for (const auto& [t, n] : input_dtypes) s += fmt::format(" {}:{}", dtype_name(t), n);
  s += "\nvalue dtypes:";
  for (const auto& [t, n] : value_dtypes) s += fmt::format(" {}:{}", dtype_name(t), n);
  s += "\nlayouts:";
  for (const auto& [l, n] : layouts) s += fmt::format(" {}:{}", layout_name(l), n);
  s += fmt::format(
      "\nzero-size values: {}, size-1 dims: {}, inexact outputs: {}, values with NaN/inf: {}, "
      "longest program: {} steps\n",
      zero_size_values, size_one_dims, inexact_outputs, non_finite_values, max_steps);
  return s;
}

}  // namespace kiln::fuzz
