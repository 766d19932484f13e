// The random program generator. See fuzz_generator.h and Note [Fuzzer numerics].
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "src/dispatch/dispatcher.h"
#include "src/graph/schema.h"
#include "tests/fuzz/fuzz_generator.h"
#include "tests/fuzz/fuzz_numerics.h"

namespace kiln::fuzz {
namespace {

// Unary and binary ops of the op table the generator can call: every argument after the tensor
// operands has a default, and the op is neither in-place, random nor a view.
struct TableOps {
  std::vector<std::string> unary, binary, binary_scalar;
};
const TableOps& table_ops() {
  static const TableOps ops = [] {
    TableOps t;
    for (const auto& def : OpRegistry::instance().ops()) {
      if (def->tags & (kTagInplace | kTagRandom | kTagView | kTagDynamicOutput | kTagFactory |
                       kTagNotTraceable))
        continue;
      const graph::Schema& s = graph::schema_of(*def);
      if (s.returns_list || s.num_returns != 1 || s.args.empty() || s.args[0].type != "Tensor")
        continue;
      auto defaulted_from = [&](size_t i) {
        for (size_t j = i; j < s.args.size(); ++j)
          if (!s.args[j].default_text) return false;
        return true;
      };
      if (def->family == "unary" && defaulted_from(1)) t.unary.push_back(def->name);
      if (def->family == "binary" && s.args.size() >= 2 && defaulted_from(2)) {
        if (s.args[1].type == "Tensor") t.binary.push_back(def->name);
        if (s.args[1].type == "Scalar") t.binary_scalar.push_back(def->name);
      }
    }
    return t;
  }();
  return ops;
}

// The ops the generator's families call by name.
const std::vector<std::string>& family_ops() {
  static const std::vector<std::string> ops = {
      "where",     "masked_fill", "clamp",  "lerp",      "addcmul", "addcdiv",     "sum",
      "mean",      "prod",        "amax",   "amin",      "argmax",  "argmin",      "max.dim",
      "min.dim",   "var",         "std",    "logsumexp", "norm",    "all",         "any",
      "softmax",   "log_softmax", "cumsum", "cumprod",   "view",    "reshape",     "permute",
      "transpose", "slice",       "select", "unsqueeze", "squeeze", "squeeze.dim", "expand",
      "flip",      "clone",       "unfold", "diagonal",  "cat",     "stack",       "_to_copy",
      "matmul",    "mm",          "bmm",    "addmm",     "linear",  "layer_norm"};
  return ops;
}

// A boxed default value from a schema ("1", "None", "'none'", "[]", "1e-05").
Arg::Constant parse_default(const std::string& text) {
  if (text == "None") return Arg::None{};
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  if (text.size() >= 2 && (text[0] == '\'' || text[0] == '"'))
    return text.substr(1, text.size() - 2);
  if (text.starts_with("[")) {
    std::vector<int64_t> ints;
    std::string body = text.substr(1, text.size() - 2);
    size_t pos = 0;
    while (pos < body.size()) {
      size_t next = body.find(',', pos);
      if (next == std::string::npos) next = body.size();
      ints.push_back(std::stoll(body.substr(pos, next - pos)));
      pos = next + 1;
    }
    return ints;
  }
  if (text.find_first_of(".eE") != std::string::npos) return std::stod(text);
  return static_cast<int64_t>(std::stoll(text));
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// A proposed call and how its result's numerics follow from its inputs'.
struct Proposal {
  std::string op;
  std::vector<Arg> args;
  int num_outputs = 1;
  Accepts accepts = Accepts::Any;
  int away_arg = -1;  // this argument is AwayFromZero (a denominator)
  Gain gain = Gain::Copy;
  double factor = 0;
};

class Generator {
 public:
  Generator(uint64_t seed, int64_t index, const GeneratorOptions& options)
      : rng_(mix(seed, static_cast<uint64_t>(index))), options_(options) {
    program_.seed = seed;
    program_.index = index;
  }

  Program run() {
    if (options_.random_ops)
      manual_seed(program_.seed * 1000003 + static_cast<uint64_t>(program_.index));
    const int inputs = chance(0.6) ? 1 : 2;
    for (int i = 0; i < inputs; ++i) add_input(random_dtype(), random_shape());
    const int target = static_cast<int>(uniform(options_.min_steps, options_.max_steps));
    for (int attempt = 0; attempt < 12 * target && static_cast<int>(program_.steps.size()) < target;
         ++attempt)
      propose_and_try();
    if (program_.steps.empty()) {  // every proposal failed (rare): keep the program non-empty
      Proposal p{.op = "clone", .args = {Arg::of(0)}};
      try_step(p);
    }
    choose_outputs();
    return std::move(program_);
  }

 private:
  static uint64_t mix(uint64_t seed, uint64_t index) {
    auto splitmix = [](uint64_t x) {
      x += 0x9e3779b97f4a7c15ULL;
      x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
      x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
      return x ^ (x >> 31);
    };
    return splitmix(splitmix(seed) ^ (index * 0x2545f4914f6cdd1dULL));
  }

  // ---- random helpers ----
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v.at(static_cast<size_t>(uniform(0, static_cast<int64_t>(v.size()) - 1)));
  }
  template <typename T>
  T pick(std::initializer_list<T> v) {
    return std::vector<T>(v).at(
        static_cast<size_t>(uniform(0, static_cast<int64_t>(v.size()) - 1)));
  }

  ScalarType random_dtype() {
    static const std::vector<std::pair<ScalarType, int>> weights = {
        {kFloat32, 30}, {kFloat64, 8}, {kFloat16, 8}, {kBFloat16, 8}, {kInt64, 8},
        {kInt32, 8},    {kInt16, 4},   {kInt8, 4},    {kUInt8, 5},    {kUInt16, 3},
        {kUInt32, 3},   {kUInt64, 3},  {kBool, 8}};
    int total = 0;
    for (const auto& [_, w] : weights) total += w;
    int64_t r = uniform(0, total - 1);
    for (const auto& [t, w] : weights) {
      if (r < w) return t;
      r -= w;
    }
    return kFloat32;
  }

  int64_t random_size() {
    if (chance(0.03)) return 0;
    if (chance(0.2)) return 1;
    if (chance(0.05)) return pick({16, 32});
    return uniform(2, 8);
  }

  std::vector<int64_t> random_shape() {
    for (;;) {
      const double r = std::uniform_real_distribution<double>(0, 1)(rng_);
      const int rank = r < 0.05 ? 0 : r < 0.3 ? 1 : r < 0.65 ? 2 : r < 0.9 ? 3 : 4;
      std::vector<int64_t> shape;
      for (int d = 0; d < rank; ++d) shape.push_back(random_size());
      if (numel_of(shape) <= options_.max_input_numel) return shape;
    }
  }

  // ---- values ----
  const ValueInfo& info(ValueId v) const { return program_.values.at(static_cast<size_t>(v)); }
  const Tensor& tensor(ValueId v) const { return env_.at(static_cast<size_t>(v)); }
  int64_t rank(ValueId v) const { return static_cast<int64_t>(info(v).shape.size()); }

  ValueId add_input(ScalarType dtype, std::vector<int64_t> shape) {
    InputSpec spec;
    spec.id = program_.num_values();
    spec.dtype = dtype;
    spec.shape = std::move(shape);
    const double l = std::uniform_real_distribution<double>(0, 1)(rng_);
    spec.layout = l < 0.6    ? InputLayout::Contiguous
                  : l < 0.75 ? InputLayout::Transposed
                  : l < 0.9  ? InputLayout::Strided
                             : InputLayout::Expanded;
    const double k = std::uniform_real_distribution<double>(0, 1)(rng_);
    spec.values = k < 0.6                                         ? InputValues::Small
                  : k < 0.8                                       ? InputValues::Integral
                  : k < 0.9                                       ? InputValues::Wide
                  : is_floating(dtype) && options_.special_values ? InputValues::Special
                                                                  : InputValues::Small;
    spec.data_seed = rng_();
    Tensor t = make_input(spec);
    const Stats s = stats_of(t);
    ValueInfo vi{.dtype = dtype,
                 .shape = spec.shape,
                 .exact = true,
                 .scale = s.max_abs,
                 .non_finite = s.non_finite,
                 .note = "input"};
    program_.values.push_back(vi);
    env_.push_back(t);
    program_.inputs.push_back(spec);
    return spec.id;
  }

  // A fresh input, or nothing when the program has as many inputs as it may.
  std::optional<ValueId> fresh(ScalarType dtype, std::vector<int64_t> shape) {
    if (static_cast<int>(program_.inputs.size()) >= options_.max_inputs) return std::nullopt;
    return add_input(dtype, std::move(shape));
  }

  // Recent values are preferred, so programs are chains more often than fans.
  ValueId pick_value() {
    if (chance(0.5)) return program_.num_values() - 1;
    return static_cast<ValueId>(uniform(0, program_.num_values() - 1));
  }

  template <typename Pred>
  std::optional<ValueId> pick_value_where(Pred pred) {
    std::vector<ValueId> ok;
    for (ValueId v = 0; v < program_.num_values(); ++v)
      if (pred(info(v))) ok.push_back(v);
    if (ok.empty()) return std::nullopt;
    return pick(ok);
  }

  static bool broadcastable(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      const int64_t x = a[a.size() - 1 - i], y = b[b.size() - 1 - i];
      if (x != y && x != 1 && y != 1) return false;
    }
    return true;
  }

  // A shape that broadcasts with `shape`: equal, with some dims 1, a suffix, 0-dim, or one that
  // widens a size-1 dim.
  std::vector<int64_t> partner_shape(const std::vector<int64_t>& shape) {
    std::vector<int64_t> s = shape;
    const double r = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (r < 0.4) return s;
    if (r < 0.5) return {};
    if (r < 0.65 && !s.empty())
      return std::vector<int64_t>(s.begin() + uniform(0, static_cast<int64_t>(s.size())), s.end());
    for (int64_t& d : s) {
      if (d == 1 && chance(0.5))
        d = uniform(2, 4);
      else if (chance(0.3))
        d = 1;
    }
    return s;
  }

  ScalarType partner_dtype(ScalarType t) { return chance(0.7) ? t : random_dtype(); }

  // The second operand of a pointwise op with `a`: an existing value that broadcasts with it or a
  // fresh input.
  ValueId operand_for(ValueId a) {
    const std::vector<int64_t> shape = info(a).shape;
    if (chance(0.35)) {
      auto v =
          pick_value_where([&](const ValueInfo& vi) { return broadcastable(vi.shape, shape); });
      if (v) return *v;
    }
    auto f = fresh(partner_dtype(info(a).dtype), partner_shape(shape));
    return f ? *f : a;
  }

  std::vector<int64_t> random_dims(ValueId v, bool allow_empty) {
    const int64_t r = rank(v);
    std::vector<int64_t> dims;
    if (r == 0 || (allow_empty && chance(0.15))) return dims;
    for (int64_t d = 0; d < r; ++d)
      if (chance(0.5)) dims.push_back(chance(0.3) ? d - r : d);
    if (dims.empty()) dims.push_back(uniform(0, r - 1));
    return dims;
  }
  int64_t random_dim(ValueId v) {  // also valid for a 0-dim tensor (-1 and 0 wrap to it)
    const int64_t r = std::max<int64_t>(rank(v), 1);
    return uniform(-r, r - 1);
  }

  // ---- proposals ----
  void propose_and_try() {
    const size_t inputs_before = program_.inputs.size();
    const size_t values_before = program_.values.size();
    const size_t steps_before = program_.steps.size();
    std::optional<Proposal> p;
    const int64_t r = uniform(0, 99);
    if (r < 16)
      p = propose_unary();
    else if (r < 34)
      p = propose_binary();
    else if (r < 42)
      p = propose_binary_scalar();
    else if (r < 50)
      p = propose_ternary();
    else if (r < 62)
      p = propose_reduction();
    else if (r < 66)
      p = propose_max_mask();
    else if (r < 83)
      p = propose_view();
    else if (r < 87)
      p = propose_cat();
    else if (r < 93)
      p = propose_cast();
    else if (r < 98)
      p = propose_matmul();
    else
      p = propose_layer_norm();
    // Random steps are drawn from their own numbers, so that programs without them are the same
    // whether or not the option is on (reproducers name seeds and indices).
    if (options_.random_ops && uniform(0, 99) < 6) {
      rollback(inputs_before, values_before, steps_before);
      p = propose_random();
    }
    if (!p || !try_step(*p)) rollback(inputs_before, values_before, steps_before);
  }

  // Drops what a failed proposal added (a composite proposal may have recorded steps already).
  void rollback(size_t inputs, size_t values, size_t steps) {
    program_.inputs.resize(inputs);
    program_.values.resize(values);
    program_.steps.resize(steps);
    env_.resize(values);
  }

  // The remaining arguments of a table op, from their schema defaults.
  static void fill_defaults(Proposal& p) {
    const graph::Schema& s = graph::schema_of(OpRegistry::instance().get(op_id(p.op)));
    for (size_t i = p.args.size(); i < s.args.size(); ++i)
      p.args.push_back(Arg::of_constant(parse_default(s.args[i].default_text.value_or("None"))));
  }

  // Note [Random steps] in program_helpers.cpp: rand_like or dropout of a floating value.
  std::optional<Proposal> propose_random() {
    const ValueId x = pick_value();
    if (!is_floating(info(x).dtype)) return std::nullopt;
    Proposal p{.op = chance(0.5) ? "generator.rand_like" : "generator.dropout"};
    p.args.push_back(Arg::of(x));
    p.accepts = Accepts::Any;
    p.gain = Gain::Relative;
    if (p.op == "generator.dropout") {
      p.args.push_back(Arg::of_constant(chance(0.5) ? 0.5 : 0.25));
      p.gain = Gain::Smooth;
    }
    return p;
  }

  std::optional<Proposal> propose_unary() {
    Proposal p{.op = pick(table_ops().unary)};
    const Rule rule = rule_of(p.op);
    p.accepts = rule.accepts;
    p.gain = rule.gain;
    const ValueId x = pick_value();
    // Vector sin/cos/tan reduce their argument accurately only over a limited range.
    if ((p.op == "sin" || p.op == "cos" || p.op == "tan") && stats_of(tensor(x)).max_abs > 1e3)
      return std::nullopt;
    p.args.push_back(Arg::of(x));
    if (p.op == "gelu")
      p.args.push_back(Arg::of_constant(std::string(chance(0.5) ? "none" : "tanh")));
    if (p.op == "softplus") p.args.push_back(Arg::of_constant(int64_t{chance(0.5) ? 1 : 2}));
    fill_defaults(p);
    return p;
  }

  std::optional<Proposal> propose_binary() {
    Proposal p{.op = pick(table_ops().binary)};
    const Rule rule = rule_of(p.op);
    p.accepts = rule.accepts;
    p.gain = rule.gain;
    const ValueId a = pick_value();
    const ValueId b = operand_for(a);
    p.args = {Arg::of(a), Arg::of(b)};
    if (p.op == "add" || p.op == "sub")
      p.args.push_back(Arg::of_constant(int64_t{chance(0.7) ? 1 : 2}));
    if (p.op == "div") {
      const std::string mode = pick({"", "", "trunc", "floor"});
      p.args.push_back(Arg::of_constant(mode));
      if (!mode.empty()) {  // rounded quotients jump at integers
        p.accepts = Accepts::Exact;
        p.gain = Gain::Relative;
      } else {
        p.away_arg = 1;
        p.factor = stats_of(tensor(b)).min_abs;
      }
    }
    fill_defaults(p);
    return p;
  }

  std::optional<Proposal> propose_binary_scalar() {
    Proposal p{.op = pick(table_ops().binary_scalar)};
    const std::string base = p.op.substr(0, p.op.find('.'));
    const Rule rule = rule_of(p.op);
    p.accepts = rule.accepts;
    p.gain = rule.gain;
    Arg::Constant c;
    if (base.find("shift") != std::string::npos) {
      c = int64_t{uniform(0, 7)};
    } else if (base == "pow") {
      const double e = pick({2.0, 3.0, 0.5, -1.0, 1.5});
      if (e == 2.0 || e == 3.0) {
        p.gain = Gain::Power;
        p.factor = e;
        c = static_cast<int64_t>(e);
      } else {
        p.accepts = Accepts::Exact;
        p.gain = Gain::Relative;
        c = e;
      }
    } else if (chance(0.6)) {
      c = int64_t{pick({-2, -1, 0, 1, 2, 3})};
    } else {
      c = pick({0.5, -1.5, 2.5, 0.25});
    }
    double magnitude = 0;
    if (const auto* i = std::get_if<int64_t>(&c)) magnitude = std::abs(static_cast<double>(*i));
    if (const auto* d = std::get_if<double>(&c)) magnitude = std::abs(*d);
    if (base == "div") {
      if (magnitude == 0) return std::nullopt;
      p.factor = magnitude;  // min |denominator|
    } else if (p.gain != Gain::Power) {
      p.factor = magnitude;
    }
    p.args = {Arg::of(pick_value()), Arg::of_constant(c)};
    if (base == "add" || base == "sub") p.args.push_back(Arg::of_constant(int64_t{1}));
    if (base == "div") p.args.push_back(Arg::of_constant(std::string()));
    fill_defaults(p);
    return p;
  }

  // A bool value that broadcasts with `shape` (to itself, when `onto` is set), or a fresh one.
  std::optional<ValueId> mask_for(const std::vector<int64_t>& shape, bool onto) {
    if (chance(0.5)) {
      auto v = pick_value_where([&](const ValueInfo& vi) {
        return vi.dtype == kBool && broadcastable(vi.shape, shape) &&
               (!onto || vi.shape.size() <= shape.size());
      });
      if (v) return v;
    }
    std::vector<int64_t> s = partner_shape(shape);
    if (onto) {  // must broadcast to `shape` without widening it
      s.resize(std::min(s.size(), shape.size()));
      for (size_t i = 0; i < s.size(); ++i)
        s[i] = chance(0.5) ? 1 : shape[shape.size() - s.size() + i];
    }
    return fresh(kBool, s);
  }

  std::optional<Proposal> propose_ternary() {
    const ValueId a = pick_value();
    const int64_t r = uniform(0, 5);
    Proposal p;
    if (r == 0) {
      auto cond = mask_for(info(a).shape, false);
      if (!cond) return std::nullopt;
      p = {.op = "where", .args = {Arg::of(*cond), Arg::of(a), Arg::of(operand_for(a))}};
    } else if (r == 1) {
      auto mask = mask_for(info(a).shape, true);
      if (!mask) return std::nullopt;
      p = {.op = "masked_fill",
           .args = {Arg::of(a), Arg::of(*mask), Arg::of_constant(pick({-1.0, 0.0, 2.5}))}};
    } else if (r == 2) {
      Arg lo =
          chance(0.7) ? Arg::of_constant(pick({-1.0, 0.0, -2.5})) : Arg::of_constant(Arg::None{});
      const bool no_lo = std::holds_alternative<Arg::None>(lo.constant);
      Arg hi = no_lo || chance(0.7) ? Arg::of_constant(pick({1.0, 2.0, 3.5}))
                                    : Arg::of_constant(Arg::None{});
      p = {.op = "clamp", .args = {Arg::of(a), lo, hi}};
    } else if (r == 3) {
      const double w = pick({0.25, 0.5, 1.5});
      p = {.op = "lerp",
           .args = {Arg::of(a), Arg::of(operand_for(a)), Arg::of_constant(w)},
           .gain = Gain::Smooth};
    } else if (r == 4) {
      const double v = pick({1.0, 0.5, -2.0});
      p = {.op = "addcmul",
           .args = {Arg::of(a), Arg::of(operand_for(a)), Arg::of(operand_for(a)),
                    Arg::of_constant(v)},
           .gain = Gain::Addcmul,
           .factor = std::abs(v)};
    } else {
      p = {.op = "addcdiv",
           .args = {Arg::of(a), Arg::of(operand_for(a)), Arg::of(operand_for(a)),
                    Arg::of_constant(0.5)},
           .accepts = Accepts::Exact,
           .gain = Gain::Relative};
    }
    return p;
  }

  // y == amax(y, dims, keepdim) (or amin): the mask of each slice's extreme, which compiled code
  // computes by evaluating y twice, once for the comparison and once inside the reduction (Note
  // [One value per expression] in src/codegen/cpp/prelude.cpp). An inexact y is taken when every
  // slice has one extreme that leads the rest by more than twice y's error budget: then rounding
  // cannot move the extreme, and a slice with no extreme (or another one) compiled is a bug.
  std::optional<Proposal> propose_max_mask() {
    if (program_.steps.size() + 2 > static_cast<size_t>(options_.max_steps)) return std::nullopt;
    const ValueId y = pick_value();
    const ValueInfo vi = info(y);  // a copy: try_step below appends to the values
    if (!is_floating(vi.dtype) || numel_of(vi.shape) == 0 || vi.non_finite) return std::nullopt;
    const std::vector<int64_t> dims = random_dims(y, false);
    const bool max = chance(0.5);
    Proposal extreme{.op = max ? "amax" : "amin",
                     .args = {Arg::of(y), Arg::of_constant(dims), Arg::of_constant(true)}};
    if (!try_step(extreme)) return std::nullopt;
    const ValueId m = program_.num_values() - 1;
    if (!vi.exact) {
      const Tensor t = tensor(y).to(kFloat64), e = tensor(m).to(kFloat64);
      const Tensor gap = (t - e).abs();
      const Tensor allowed = (t.abs() + vi.scale) * (2 * vi.tol);
      const bool one_extreme_each = ((gap == 0).sum(dims, true) == 1).all().item<bool>();
      const bool separated = ((gap == 0) | (gap > allowed)).all().item<bool>();
      if (!one_extreme_each || !separated) return std::nullopt;
    }
    return Proposal{.op = "eq", .args = {Arg::of(y), Arg::of(m)}, .accepts = Accepts::Any};
  }

  std::optional<Proposal> propose_reduction() {
    const ValueId x = pick_value();
    const std::vector<int64_t>& shape = info(x).shape;
    const bool keepdim = chance(0.4);
    auto reduced_count = [&](const std::vector<int64_t>& dims) {
      if (dims.empty()) return numel_of(shape);
      int64_t n = 1;
      const int64_t r = static_cast<int64_t>(shape.size());
      for (int64_t d : dims) n *= shape.empty() ? 1 : shape.at(static_cast<size_t>((d + r) % r));
      return n;
    };
    const Arg none = Arg::of_constant(Arg::None{});
    const int64_t k = uniform(0, 14);
    Proposal p;
    if (k <= 2) {
      const std::string op = pick({"sum", "sum", "mean", "prod"});
      const std::vector<int64_t> dims = random_dims(x, true);
      p = {.op = op, .args = {Arg::of(x), Arg::of_constant(dims), Arg::of_constant(keepdim), none}};
      if (op == "sum") {
        p.gain = Gain::Sum;
        p.factor = static_cast<double>(reduced_count(dims));
      } else if (op == "mean") {
        p.gain = Gain::Smooth;
      } else {
        p.accepts = Accepts::Exact;
        p.gain = Gain::Relative;
      }
    } else if (k == 3) {
      p = {.op = pick({"amax", "amin"}),
           .args = {Arg::of(x), Arg::of_constant(random_dims(x, true)), Arg::of_constant(keepdim)}};
    } else if (k == 4) {
      Arg dim = chance(0.3) ? none : Arg::of_constant(random_dim(x));
      p = {.op = pick({"argmax", "argmin"}),
           .args = {Arg::of(x), dim, Arg::of_constant(keepdim)},
           .accepts = Accepts::Exact};
    } else if (k == 5) {
      p = {.op = pick({"max.dim", "min.dim"}),
           .args = {Arg::of(x), Arg::of_constant(random_dim(x)), Arg::of_constant(keepdim)},
           .num_outputs = 2,
           .accepts = Accepts::Exact};
    } else if (k == 6 || k == 7) {
      const std::string op = pick({"var", "std"});
      p = {.op = op,
           .args = {Arg::of(x), Arg::of_constant(random_dims(x, true)),
                    Arg::of_constant(chance(0.5) ? 0.0 : 1.0), Arg::of_constant(keepdim)},
           .gain = op == "var" ? Gain::Square : Gain::Std};
    } else if (k == 8) {
      p = {.op = "logsumexp",
           .args = {Arg::of(x), Arg::of_constant(random_dims(x, false)), Arg::of_constant(keepdim)},
           .gain = Gain::Smooth};
    } else if (k == 9) {
      p = {.op = "norm",
           .args = {Arg::of(x), Arg::of_constant(int64_t{pick({1, 2})}),
                    Arg::of_constant(random_dims(x, true)), Arg::of_constant(keepdim)},
           .accepts = Accepts::Exact,
           .gain = Gain::Relative};
    } else if (k == 10) {
      p = {.op = pick({"all", "any"}),
           .args = {Arg::of(x), Arg::of_constant(random_dims(x, true)), Arg::of_constant(keepdim)},
           .accepts = Accepts::Exact};
    } else if (k <= 12) {
      p = {.op = pick({"softmax", "log_softmax"}),
           .args = {Arg::of(x), Arg::of_constant(random_dim(x)), none},
           .gain = Gain::Smooth};
    } else {
      const int64_t dim = random_dim(x);
      const std::string op = chance(0.75) ? "cumsum" : "cumprod";
      p = {.op = op, .args = {Arg::of(x), Arg::of_constant(dim), none}};
      if (op == "cumsum") {
        p.gain = Gain::Sum;
        p.factor = static_cast<double>(reduced_count({dim}));
      } else {
        p.accepts = Accepts::Exact;
        p.gain = Gain::Relative;
      }
    }
    return p;
  }

  // A random shape with `numel` elements (a regrouping of its prime factors), maybe with a -1.
  std::vector<int64_t> reshape_target(int64_t numel) {
    if (numel == 0) return pick<std::vector<int64_t>>({{0}, {0, 3}, {2, 0}, {1, 0, 1}});
    std::vector<int64_t> factors;
    int64_t n = numel;
    for (int64_t f = 2; f * f <= n; ++f)
      while (n % f == 0) {
        factors.push_back(f);
        n /= f;
      }
    if (n > 1) factors.push_back(n);
    std::vector<int64_t> shape(static_cast<size_t>(uniform(1, 4)), 1);
    for (int64_t f : factors)
      shape[static_cast<size_t>(uniform(0, static_cast<int64_t>(shape.size()) - 1))] *= f;
    if (chance(0.3))
      shape[static_cast<size_t>(uniform(0, static_cast<int64_t>(shape.size()) - 1))] = -1;
    return shape;
  }

  std::optional<Proposal> propose_view() {
    const ValueId x = pick_value();
    const std::vector<int64_t> shape = info(x).shape;
    const int64_t r = static_cast<int64_t>(shape.size());
    auto call = [&](std::string op, std::vector<Arg> rest) {
      rest.insert(rest.begin(), Arg::of(x));
      return Proposal{.op = std::move(op), .args = std::move(rest)};
    };
    switch (uniform(0, 11)) {
      case 0:
        return call(chance(0.5) ? "reshape" : "view",
                    {Arg::of_constant(reshape_target(numel_of(shape)))});
      case 1: {
        std::vector<int64_t> perm(static_cast<size_t>(r));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng_);
        return call("permute", {Arg::of_constant(perm)});
      }
      case 2:
        return call("transpose",
                    {Arg::of_constant(random_dim(x)), Arg::of_constant(random_dim(x))});
      case 3: {
        if (r == 0) return std::nullopt;
        const int64_t dim = uniform(0, r - 1), size = shape[static_cast<size_t>(dim)];
        const int64_t start = uniform(0, size), end = uniform(start, size + (chance(0.2) ? 3 : 0));
        Arg s = chance(0.15) ? Arg::of_constant(Arg::None{})
                             : Arg::of_constant(chance(0.2) ? start - size : start);
        Arg e = chance(0.15) ? Arg::of_constant(Arg::None{}) : Arg::of_constant(end);
        return call("slice", {Arg::of_constant(dim), s, e, Arg::of_constant(uniform(1, 3))});
      }
      case 4: {
        if (r == 0) return std::nullopt;
        const int64_t dim = uniform(0, r - 1), size = shape[static_cast<size_t>(dim)];
        if (size == 0) return std::nullopt;
        return call("select", {Arg::of_constant(dim), Arg::of_constant(uniform(-size, size - 1))});
      }
      case 5:
        return call("unsqueeze", {Arg::of_constant(uniform(-(r + 1), r))});
      case 6:
        return chance(0.3) ? call("squeeze", {})
                           : call("squeeze.dim", {Arg::of_constant(random_dim(x))});
      case 7: {
        std::vector<int64_t> sizes;
        if (chance(0.3)) sizes.push_back(uniform(1, 3));
        for (int64_t s : shape)
          sizes.push_back(s == 1 && chance(0.7) ? uniform(0, 4) : (chance(0.5) ? -1 : s));
        return call("expand", {Arg::of_constant(sizes)});
      }
      case 8:
        return call("flip", {Arg::of_constant(random_dims(x, false))});
      case 9:
        if (r == 0) return std::nullopt;
        return call("unfold", {Arg::of_constant(random_dim(x)), Arg::of_constant(uniform(0, 3)),
                               Arg::of_constant(uniform(1, 3))});
      case 10:
        if (r < 2) return std::nullopt;
        return call("diagonal", {Arg::of_constant(uniform(-2, 2)), Arg::of_constant(random_dim(x)),
                                 Arg::of_constant(random_dim(x))});
      default:
        return call("clone", {});
    }
  }

  std::optional<Proposal> propose_cat() {
    const ValueId x = pick_value();
    const std::vector<int64_t> shape = info(x).shape;
    const bool stack = chance(0.25);
    const int64_t r = static_cast<int64_t>(shape.size());
    const int64_t dim = stack ? uniform(-(r + 1), r) : random_dim(x);
    std::vector<ValueId> parts = {x};
    const int64_t more = uniform(1, 2);
    for (int64_t i = 0; i < more; ++i) {
      if (chance(0.3)) {
        parts.push_back(x);
        continue;
      }
      std::vector<int64_t> s = shape;
      if (!stack && r > 0) s[static_cast<size_t>((dim + r) % r)] = uniform(0, 3);
      auto f = fresh(partner_dtype(info(x).dtype), s);
      parts.push_back(f ? *f : x);
    }
    if (chance(0.5)) std::shuffle(parts.begin(), parts.end(), rng_);
    return Proposal{.op = stack ? "stack" : "cat",
                    .args = {Arg::of_list(parts), Arg::of_constant(dim)}};
  }

  std::optional<Proposal> propose_cast() {
    const ValueId x = pick_value();
    const ScalarType to = random_dtype();
    const ScalarType from = info(x).dtype;
    Proposal p{.op = "_to_copy", .args = {Arg::of(x), Arg::of_constant(to)}};
    if (is_floating(from) && !is_floating(to)) {
      // Out-of-range float-to-integer conversion is undefined in C++; only exact, in-range values.
      p.accepts = Accepts::Exact;
      if (to != kBool) {
        const Stats s = stats_of(tensor(x));
        const bool in_range = visit_dtype(to, [&]<typename T>() {
          return s.min >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
                 s.max <= static_cast<double>(std::numeric_limits<T>::max()) * 0.999;
        });
        if (s.non_finite || !in_range) return std::nullopt;
      }
    }
    return p;
  }

  std::optional<Proposal> propose_matmul() {
    const ValueId a = pick_value();
    const std::vector<int64_t> shape = info(a).shape;
    if (shape.empty()) return std::nullopt;
    const int64_t k = shape.back(), n = uniform(1, 8);
    const ScalarType dtype = partner_dtype(info(a).dtype);
    const int64_t which = uniform(0, 4);
    Proposal p{.gain = Gain::Matmul, .factor = static_cast<double>(k)};
    if (which == 0 || which == 1) {
      std::vector<int64_t> bshape =
          chance(0.2) ? std::vector<int64_t>{k} : std::vector<int64_t>{k, n};
      if (shape.size() >= 3 && bshape.size() == 2 && chance(0.5))
        bshape.insert(bshape.begin(), shape[shape.size() - 3]);
      auto existing = pick_value_where([&](const ValueInfo& vi) {
        return vi.shape.size() == 2 && vi.shape[0] == k && vi.dtype == info(a).dtype;
      });
      auto b = existing && chance(0.4) ? existing : fresh(dtype, bshape);
      if (!b) return std::nullopt;
      p.op = which == 0 ? "matmul" : "mm";
      p.args = {Arg::of(a), Arg::of(*b)};
    } else if (which == 2) {
      auto b = fresh(dtype, shape.size() == 3 ? std::vector<int64_t>{shape[0], k, n}
                                              : std::vector<int64_t>{k, n});
      if (!b) return std::nullopt;
      p.op = "bmm";
      p.args = {Arg::of(a), Arg::of(*b)};
    } else if (which == 3) {
      auto w = fresh(dtype, {n, k});
      if (!w) return std::nullopt;
      std::optional<ValueId> bias;
      if (chance(0.6)) bias = fresh(dtype, {n});
      p.op = "linear";
      p.args = {Arg::of(a), Arg::of(*w), bias ? Arg::of(*bias) : Arg::of_constant(Arg::None{})};
    } else {
      if (shape.size() != 2) return std::nullopt;
      auto b = fresh(dtype, {k, n});
      auto c = b ? fresh(dtype,
                         chance(0.5) ? std::vector<int64_t>{n} : std::vector<int64_t>{shape[0], n})
                 : std::nullopt;
      if (!c) return std::nullopt;
      p.op = "addmm";
      p.args = {Arg::of(*c), Arg::of(a), Arg::of(*b), Arg::of_constant(int64_t{1}),
                Arg::of_constant(int64_t{1})};
    }
    return p;
  }

  std::optional<Proposal> propose_layer_norm() {
    const ValueId x = pick_value();
    const std::vector<int64_t> shape = info(x).shape;
    if (shape.empty() || !is_floating(info(x).dtype)) return std::nullopt;
    const int64_t k = std::min<int64_t>(static_cast<int64_t>(shape.size()), uniform(1, 2));
    const std::vector<int64_t> normalized(shape.end() - k, shape.end());
    // Rows of (nearly) constant values make layer_norm amplify rounding without bound.
    std::vector<int64_t> dims;
    for (int64_t d = static_cast<int64_t>(shape.size()) - k; d < static_cast<int64_t>(shape.size());
         ++d)
      dims.push_back(d);
    if (numel_of(shape) > 0) {
      const Stats row_std = stats_of(kiln::std(tensor(x).to(kFloat64), dims, 0.0));
      if (row_std.non_finite || row_std.min_abs < 0.1 * std::max(info(x).scale, 1e-3))
        return std::nullopt;
    }
    Proposal p{.op = "layer_norm",
               .args = {Arg::of(x), Arg::of_constant(normalized)},
               .gain = Gain::Normalize};
    for (int i = 0; i < 2; ++i) {
      auto v = chance(0.7) ? fresh(info(x).dtype, normalized) : std::nullopt;
      p.args.push_back(v ? Arg::of(*v) : Arg::of_constant(Arg::None{}));
    }
    p.args.push_back(Arg::of_constant(1e-5));
    return p;
  }

  // ---- acceptance ----

  // Runs the proposal eagerly and derives its outputs' numerics; false (nothing recorded) when
  // the op rejects it or its numerics would make the comparison meaningless.
  bool try_step(const Proposal& p) {
    Step step{.op = p.op, .args = p.args};
    for (int i = 0; i < p.num_outputs; ++i) step.outputs.push_back(program_.num_values() + i);
    env_.resize(static_cast<size_t>(program_.num_values() + p.num_outputs));
    try {
      run_step(step, env_);
    } catch (const std::exception&) {
      return false;
    }

    std::vector<Operand> operands;
    for (size_t i = 0; i < p.args.size(); ++i) {
      std::vector<ValueId> vs = p.args[i].values;
      if (p.args[i].is_value()) vs.push_back(*p.args[i].value);
      for (ValueId v : vs) operands.push_back({static_cast<int>(i), info(v), tensor(v)});
    }
    std::vector<Tensor> results;
    for (ValueId v : step.outputs) results.push_back(tensor(v));
    const StepNumerics numerics{.op = p.op,
                                .accepts = p.accepts,
                                .away_arg = p.away_arg,
                                .gain = p.gain,
                                .factor = p.factor};
    std::optional<std::vector<ValueInfo>> outs =
        judge_step(numerics, operands, results, 4 * options_.max_input_numel);
    if (!outs) return false;
    for (ValueInfo& vi : *outs) program_.values.push_back(std::move(vi));
    program_.steps.push_back(std::move(step));
    return true;
  }

  // The last value, and most values nothing else uses (so most steps matter), at most four.
  void choose_outputs() {
    std::set<ValueId> used;
    for (const Step& s : program_.steps)
      for (const Arg& a : s.args) {
        if (a.is_value()) used.insert(*a.value);
        used.insert(a.values.begin(), a.values.end());
      }
    const ValueId last = program_.steps.back().outputs.front();
    program_.outputs = {last};
    for (const Step& s : program_.steps)
      for (ValueId v : s.outputs) {
        const double p = used.contains(v) ? 0.1 : 0.8;
        if (v != last && program_.outputs.size() < 4 && chance(p)) program_.outputs.push_back(v);
      }
  }

  std::mt19937_64 rng_;
  GeneratorOptions options_;
  Program program_;
  std::vector<Tensor> env_;  // eager values of the program so far, indexed by ValueId
};

}  // namespace

Program generate(uint64_t seed, int64_t index, const GeneratorOptions& options) {
  return Generator(seed, index, options).run();
}

std::vector<std::string> fuzzed_ops() {
  std::vector<std::string> ops;
  const TableOps& t = table_ops();
  for (const auto* list : {&t.unary, &t.binary, &t.binary_scalar})
    ops.insert(ops.end(), list->begin(), list->end());
  for (const std::string& op : family_ops()) ops.push_back(op);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

}  // namespace kiln::fuzz
