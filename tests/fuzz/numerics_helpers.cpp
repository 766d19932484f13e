// The numerics rules of the fuzzer. See Note [Fuzzer numerics] in fuzz_numerics.h.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "tests/fuzz/fuzz_numerics.h"

namespace kiln::fuzz {
namespace {

// Rules of the unary and binary ops the generator finds in the op table. An op that is not
// listed gets the conservative default (exact inputs, a few ulps of error).
const std::map<std::string, Rule>& known_rules() {
  static const std::map<std::string, Rule> rules = [] {
    std::map<std::string, Rule> r;
    const Rule copy{Accepts::Any, Gain::Copy}, smooth{Accepts::Any, Gain::Smooth},
        discontinuous{Accepts::Exact, Gain::Copy}, singular{Accepts::AwayFromZero, Gain::Relative};
    for (const char* n : {"neg", "abs", "relu", "isnan", "isinf", "isfinite", "bitwise_not",
                          "nan_to_num", "maximum", "minimum", "bitwise_and", "bitwise_or",
                          "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"})
      r[n] = copy;
    for (const char* n :
         {"sigmoid", "tanh", "sin", "cos", "atan", "erf", "gelu", "silu", "softplus", "add", "sub"})
      r[n] = smooth;
    for (const char* n : {"sign", "floor", "ceil", "round", "trunc", "frac", "logical_not", "eq",
                          "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"})
      r[n] = discontinuous;
    for (const char* n : {"log", "log2", "log10", "sqrt", "rsqrt", "reciprocal"}) r[n] = singular;
    r["exp"] = {Accepts::Any, Gain::Exp};
    r["mul"] = {Accepts::Any, Gain::Product};
    r["div"] = {Accepts::Any, Gain::Quotient};  // the denominator: AwayFromZero (propose_binary)
    return r;
  }();
  return rules;
}

bool reduced_float(ScalarType t) { return t == kFloat16 || t == kBFloat16; }

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// The scale of an inexact result (Gain); negative to reject the call.
double scale_of(const StepNumerics& p, double m, double sum_scale, double max_scale,
                double prod_scale, const std::vector<double>& scales, const Stats& out) {
  switch (p.gain) {
    case Gain::Copy:
    case Gain::Smooth:
      return std::max(m, 2 * (sum_scale + p.factor));
    case Gain::Product:
      return std::max(m, 2 * prod_scale * std::max(p.factor, 1.0));
    case Gain::Exp:
      return std::max(m, 2 * m * std::max(max_scale, 1.0));
    case Gain::Sum:
      return std::max(m, 2 * std::sqrt(std::max(p.factor, 1.0)) * max_scale);
    case Gain::Square:
      return std::max(m, 4 * max_scale * max_scale);
    case Gain::Std:
      if (out.min < 0.1 * max_scale) return -1;
      return std::max(m, 20 * max_scale);
    case Gain::Relative:
      return 8 * std::max(m, 1.0);
    case Gain::Quotient: {
      const double a = scales.empty() ? 0 : scales[0];
      return p.factor > 0 ? std::max(8 * m, 2 * a / p.factor) : 8 * m;
    }
    case Gain::Power:
      return std::max(m, 2 * p.factor * std::pow(max_scale, p.factor));
    case Gain::Matmul: {
      const double ab = scales.size() >= 2 ? scales[0] * scales[1] : max_scale;
      // addmm's bias comes first; linear's last.
      const double bias = scales.size() >= 3 ? (p.op == "addmm" ? scales[0] : scales[2]) : 0;
      const double prod = p.op == "addmm" && scales.size() >= 3 ? scales[1] * scales[2] : ab;
      return std::max(m, 2 * std::sqrt(std::max(p.factor, 1.0)) * prod + 2 * bias);
    }
    case Gain::Addcmul: {
      const double t = scales.size() >= 3 ? scales[1] * scales[2] : max_scale;
      return std::max(m, 2 * ((scales.empty() ? 0 : scales[0]) + p.factor * t));
    }
    case Gain::Normalize: {
      const double w = scales.size() >= 2 ? std::max(scales[1], 1.0) : 1.0;
      const double b = scales.size() >= 3 ? scales[2] : 0;
      return std::max(m, 20 * w + 2 * b);
    }
  }
  return m;
}

}  // namespace

Rule rule_of(const std::string& name) {
  const std::string base = name.substr(0, name.find('.'));
  auto it = known_rules().find(base);
  return it == known_rules().end() ? Rule{} : it->second;
}

double rounding_step(ScalarType t) {
  switch (t) {
    case kFloat64:
      return 1e-12;
    case kFloat32:
      return 2e-6;
    case kFloat16:
      return 2e-3;
    case kBFloat16:
      return 1.6e-2;
    default:
      return 0;
  }
}

double magnitude_limit(ScalarType t) {
  switch (t) {
    case kFloat16:
      return 1e4;
    case kFloat64:
      return 1e100;
    default:
      return 1e30;
  }
}

Stats stats_of(const Tensor& t) {
  Stats s;
  for (double v : t.to_vector<double>()) {
    if (!std::isfinite(v)) {
      s.non_finite = true;
      continue;
    }
    s.max_abs = std::max(s.max_abs, std::abs(v));
    s.min_abs = std::min(s.min_abs, std::abs(v));
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  return s;
}

std::optional<std::vector<ValueInfo>> judge_step(const StepNumerics& p,
                                                 const std::vector<Operand>& operands,
                                                 const std::vector<Tensor>& results,
                                                 int64_t max_numel) {
  // Inputs: which inexact values the op takes, and the error budget they bring.
  double sum_tol = 0, max_tol = 0, sum_scale = 0, max_scale = 0, prod_scale = 1;
  std::vector<double> scales;
  bool all_exact = true, any_non_finite = false, rounds_twice = false;
  for (const Operand& operand : operands) {
    const ValueInfo& in = operand.info;
    if (!in.exact) {
      const Accepts acc = operand.arg == p.away_arg ? Accepts::AwayFromZero : p.accepts;
      if (acc == Accepts::Exact) return std::nullopt;
      if (acc == Accepts::AwayFromZero && numel_of(in.shape) > 0 &&
          stats_of(operand.tensor).min_abs < 0.25 * in.scale)
        return std::nullopt;
    }
    all_exact &= in.exact;
    any_non_finite |= in.non_finite;
    sum_tol += in.tol;
    max_tol = std::max(max_tol, in.tol);
    sum_scale += in.scale;
    max_scale = std::max(max_scale, in.scale);
    prod_scale *= in.scale;
    rounds_twice |= in.dtype == kFloat64 || (is_integral(in.dtype) && in.scale > 16777216.0);
    scales.push_back(in.scale);
  }

  std::vector<ValueInfo> outs;
  for (const Tensor& t : results) {
    ValueInfo vi{.dtype = t.dtype(), .shape = t.sizes().vec()};
    if (t.numel() > max_numel) return std::nullopt;
    const Stats s = stats_of(t);
    if (!is_floating(vi.dtype)) {
      vi.exact = true;
      vi.scale = s.max_abs;
      vi.note = "exact";
      outs.push_back(vi);
      continue;
    }
    if (s.non_finite && !any_non_finite) return std::nullopt;  // overflow or a new NaN
    if (s.max_abs > magnitude_limit(vi.dtype)) return std::nullopt;
    vi.non_finite = s.non_finite;
    const double m = s.max_abs, step_tol = rounding_step(vi.dtype);
    if (p.gain == Gain::Copy) {
      // A float64 or a wide integer becomes float16/bfloat16 either directly or through float32
      // (two roundings, as c10 does): both are fair, so such a copy is not bit-exact.
      vi.exact = all_exact && !(reduced_float(vi.dtype) && rounds_twice);
      vi.scale = std::max(m, max_scale);
      vi.tol = all_exact ? 0 : std::max(max_tol, step_tol);
    } else {
      vi.exact = false;
      vi.tol = sum_tol + step_tol;
      vi.scale = scale_of(p, m, sum_scale, max_scale, prod_scale, scales, s);
      if (vi.scale < 0) return std::nullopt;
    }
    if (!vi.exact && (vi.tol > 0.2 || vi.scale > magnitude_limit(vi.dtype))) return std::nullopt;
    vi.note = vi.exact ? "exact" : fmt::format("inexact scale {:.3g} tol {:.2g}", vi.scale, vi.tol);
    outs.push_back(vi);
  }
  return outs;
}

}  // namespace kiln::fuzz
