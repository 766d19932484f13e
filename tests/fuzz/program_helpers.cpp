// Program descriptions: text form, input construction, the eager interpreter.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <random>
#include <set>

#include "src/dispatch/dispatcher.h"
#include "src/graph/schema.h"
#include "tests/fuzz/fuzz_program.h"

namespace kiln::fuzz {

std::string_view layout_name(InputLayout layout) {
  switch (layout) {
    case InputLayout::Contiguous:
      return "contiguous";
    case InputLayout::Transposed:
      return "transposed";
    case InputLayout::Strided:
      return "strided";
    case InputLayout::Expanded:
      return "expanded";
  }
  return "?";
}

std::string_view values_name(InputValues values) {
  switch (values) {
    case InputValues::Small:
      return "small";
    case InputValues::Integral:
      return "integral";
    case InputValues::Special:
      return "special";
    case InputValues::Wide:
      return "wide";
  }
  return "?";
}

std::vector<std::string> argument_names(const std::string& op) {
  if (op == "generator.rand_like") return {"self"};
  if (op == "generator.dropout") return {"input", "p"};
  const OpDef& def = OpRegistry::instance().get(op_id(op));
  std::vector<std::string> names;
  for (const graph::SchemaArg& a : graph::schema_of(def).args) names.push_back(a.name);
  return names;
}

namespace {

std::string constant_text(const Arg::Constant& c) {
  struct Printer {
    std::string operator()(Arg::None) const { return "None"; }
    std::string operator()(int64_t v) const { return fmt::format("{}", v); }
    std::string operator()(double v) const { return fmt::format("{}", v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::vector<int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ", "));
    }
    std::string operator()(ScalarType t) const { return std::string(dtype_name(t)); }
    std::string operator()(const std::string& s) const { return "'" + s + "'"; }
  };
  return std::visit(Printer{}, c);
}

std::string arg_text(const Arg& a) {
  if (a.is_value()) return fmt::format("%{}", *a.value);
  if (a.list) {
    std::vector<std::string> names;
    for (ValueId v : a.values) names.push_back(fmt::format("%{}", v));
    return fmt::format("[{}]", fmt::join(names, ", "));
  }
  return constant_text(a.constant);
}

std::string type_text(const ValueInfo& v) {
  return fmt::format("{}[{}]", dtype_name(v.dtype), fmt::join(v.shape, ", "));
}

IValue box(const Arg& a, const std::vector<Tensor>& env) {
  if (a.is_value()) return IValue(env.at(static_cast<size_t>(*a.value)));
  if (a.list) {
    std::vector<Tensor> ts;
    for (ValueId v : a.values) ts.push_back(env.at(static_cast<size_t>(v)));
    return IValue(std::move(ts));
  }
  struct Boxer {
    IValue operator()(Arg::None) const { return IValue(); }
    IValue operator()(int64_t v) const { return IValue(v); }
    IValue operator()(double v) const { return IValue(v); }
    IValue operator()(bool v) const { return IValue(v); }
    IValue operator()(const std::vector<int64_t>& v) const { return IValue(v); }
    IValue operator()(ScalarType t) const { return IValue(t); }
    IValue operator()(const std::string& s) const { return IValue(s); }
  };
  return std::visit(Boxer{}, a.constant);
}

// Draws one element of dtype T for `kind`.
template <typename T>
T draw(std::mt19937_64& rng, InputValues kind) {
  if constexpr (std::is_same_v<T, bool>) {
    return (rng() & 1) != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (kind == InputValues::Wide) return static_cast<T>(rng());
    const int64_t lo = std::is_unsigned_v<T> ? 0 : (kind == InputValues::Integral ? -4 : -8);
    const int64_t hi = kind == InputValues::Integral ? 4 : (std::is_unsigned_v<T> ? 10 : 8);
    return static_cast<T>(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
  } else {
    double v = 0;
    if (kind == InputValues::Integral) {
      v = static_cast<double>(std::uniform_int_distribution<int>(-4, 4)(rng));
    } else {
      const double range = kind == InputValues::Wide ? 100.0 : 3.0;
      v = std::uniform_real_distribution<double>(-range, range)(rng);
    }
    if constexpr (std::is_same_v<T, double>) {
      return v;
    } else {
      return T(static_cast<float>(v));
    }
  }
}

template <typename T>
Tensor random_storage(const std::vector<int64_t>& shape, InputValues kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  std::vector<T> data(static_cast<size_t>(numel));
  for (size_t i = 0; i < data.size(); ++i) data[i] = draw<T>(rng, kind);  // vector<bool> too
  if constexpr (is_floating_v<T>) {
    if (kind == InputValues::Special && numel > 0) {
      const double specials[] = {std::nan(""), INFINITY, -INFINITY};
      for (double s : specials) {
        const size_t at = static_cast<size_t>(rng() % static_cast<uint64_t>(numel));
        if constexpr (std::is_same_v<T, double>) {
          data[at] = s;
        } else {
          data[at] = T(static_cast<float>(s));
        }
      }
    }
  }
  return from_vector(data, shape);
}

}  // namespace

Tensor make_input(const InputSpec& spec) {
  std::vector<int64_t> storage = spec.shape;
  const int64_t rank = static_cast<int64_t>(storage.size());
  InputLayout layout = spec.layout;
  int expanded_dim = -1;
  if (layout == InputLayout::Transposed && rank >= 2) {
    std::swap(storage[rank - 1], storage[rank - 2]);
  } else if (layout == InputLayout::Strided && rank >= 1) {
    storage[0] *= 2;
  } else if (layout == InputLayout::Expanded) {
    for (int64_t d = 0; d < rank && expanded_dim < 0; ++d)
      if (storage[d] > 1) expanded_dim = static_cast<int>(d);
    if (expanded_dim >= 0) storage[expanded_dim] = 1;
  } else {
    layout = InputLayout::Contiguous;  // the layout does not apply to this rank
  }
  Tensor base = visit_dtype(spec.dtype, [&]<typename T>() {
    return random_storage<T>(storage, spec.values, spec.data_seed);
  });
  switch (layout) {
    case InputLayout::Transposed:
      return base.transpose(-1, -2);
    case InputLayout::Strided:
      return base.slice(0, 0, std::nullopt, 2);
    case InputLayout::Expanded:
      return expanded_dim >= 0 ? base.expand(SymIntArrayRef(spec.shape)) : base;
    case InputLayout::Contiguous:
      return base;
  }
  return base;
}

std::vector<Tensor> make_inputs(const Program& program) {
  std::vector<Tensor> inputs;
  for (const InputSpec& spec : program.inputs) inputs.push_back(make_input(spec));
  return inputs;
}

// Note [Random steps]
// "generator.rand_like" and "generator.dropout" are not op-table entries (those take the seed and
// offset as arguments): they call the public functions, which draw from the default generator.
// A compiled function must draw the very numbers eager code draws from the same generator state
// (Note [Random ops under a trace] in src/ops/random.cpp), so the runner seeds the generator
// alike before the eager and the compiled run, and compares them like any other values.
bool run_random_step(const Step& step, std::vector<Tensor>& env) {
  if (step.op != "generator.rand_like" && step.op != "generator.dropout") return false;
  const Tensor& x = env.at(static_cast<size_t>(*step.args.at(0).value));
  env.at(static_cast<size_t>(step.outputs.at(0))) =
      step.op == "generator.rand_like"
          ? rand_like(x)
          : dropout(x, std::get<double>(step.args.at(1).constant), /*train=*/true);
  return true;
}

void run_step(const Step& step, std::vector<Tensor>& env) {
  if (run_random_step(step, env)) return;
  static thread_local std::map<std::string, OpId> ids;  // op_id once per name
  auto it = ids.find(step.op);
  if (it == ids.end()) it = ids.emplace(step.op, op_id(step.op)).first;
  Stack stack;
  for (const Arg& a : step.args) stack.push_back(box(a, env));
  Stack out = dispatch::call(it->second, stack);
  KILN_CHECK(out.size() >= step.outputs.size(), Error,
             "fuzz: op {} returned {} values, the program expects {}", step.op, out.size(),
             step.outputs.size());
  for (size_t i = 0; i < step.outputs.size(); ++i)
    env.at(static_cast<size_t>(step.outputs[i])) = std::move(out[i].tensor());
}

std::vector<Tensor> interpret(const Program& program, const std::vector<Tensor>& inputs) {
  KILN_CHECK(inputs.size() == program.inputs.size(), ValueError,
             "fuzz: the program takes {} inputs, got {}", program.inputs.size(), inputs.size());
  std::vector<Tensor> env(static_cast<size_t>(program.num_values()));
  for (size_t i = 0; i < inputs.size(); ++i)
    env.at(static_cast<size_t>(program.inputs[i].id)) = inputs[i];
  for (const Step& step : program.steps) run_step(step, env);
  std::vector<Tensor> outputs;
  for (ValueId v : program.outputs) outputs.push_back(env.at(static_cast<size_t>(v)));
  return outputs;
}

std::string Program::to_text() const {
  std::string s = fmt::format("program seed={} index={}\n", seed, index);
  for (const InputSpec& in : inputs) {
    s += fmt::format("  %{} = input {} {} {} (data seed {})\n", in.id,
                     type_text(values.at(static_cast<size_t>(in.id))), layout_name(in.layout),
                     values_name(in.values), in.data_seed);
  }
  for (const Step& step : steps) {
    std::vector<std::string> outs, args;
    for (ValueId v : step.outputs) outs.push_back(fmt::format("%{}", v));
    const std::vector<std::string> names = argument_names(step.op);
    for (size_t i = 0; i < step.args.size(); ++i) {
      const std::string name = i < names.size() ? names[i] : fmt::format("arg{}", i);
      args.push_back(fmt::format("{}={}", name, arg_text(step.args[i])));
    }
    std::vector<std::string> notes;
    for (ValueId v : step.outputs) {
      const ValueInfo& info = values.at(static_cast<size_t>(v));
      notes.push_back(fmt::format("{} {}", type_text(info), info.note));
    }
    s += fmt::format("  {} = {}({})    # {}\n", fmt::join(outs, ", "), step.op,
                     fmt::join(args, ", "), fmt::join(notes, "; "));
  }
  std::vector<std::string> outs;
  for (ValueId v : outputs) outs.push_back(fmt::format("%{}", v));
  s += fmt::format("  return {}\n", fmt::join(outs, ", "));
  return s;
}

Program Program::pruned(std::vector<ValueId> new_outputs) const {
  Program p = *this;
  p.outputs = std::move(new_outputs);
  std::set<ValueId> needed(p.outputs.begin(), p.outputs.end());
  std::vector<Step> kept;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    bool used = false;
    for (ValueId v : it->outputs) used |= needed.contains(v);
    if (!used) continue;
    for (const Arg& a : it->args) {
      if (a.is_value()) needed.insert(*a.value);
      for (ValueId v : a.values) needed.insert(v);
    }
    kept.insert(kept.begin(), *it);
  }
  p.steps = std::move(kept);
  p.inputs.clear();
  for (const InputSpec& in : inputs)
    if (needed.contains(in.id)) p.inputs.push_back(in);
  return p;
}

}  // namespace kiln::fuzz
