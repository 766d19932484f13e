#include "src/capture/guards.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "kiln/autograd.h"

namespace kiln::capture {
namespace {

std::string arg_value_str(const ArgValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return "?";
}

// Bitwise: a guard on 0.0 must fail for -0.0, and NaN must equal NaN.
bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }

bool same_scalar(const ArgValue& a, const ArgValue& b) {
  if (a.index() != b.index()) return false;
  if (const auto* i = std::get_if<int64_t>(&a)) return *i == std::get<int64_t>(b);
  if (const auto* d = std::get_if<double>(&a)) return same_bits(*d, std::get<double>(b));
  if (const auto* bb = std::get_if<bool>(&a)) return *bb == std::get<bool>(b);
  return false;
}

std::string attribute_str(const nn::AttributeValue& v) {
  return std::visit(
      []<typename T>(const T& x) -> std::string {
        if constexpr (std::is_same_v<T, std::string>)
          return fmt::format("\"{}\"", x);
        else if constexpr (std::is_same_v<T, bool>)
          return x ? "true" : "false";
        else
          return fmt::format("{}", x);
      },
      v);
}

bool same_attribute(const nn::AttributeValue& a, const nn::AttributeValue& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) return same_bits(*x, std::get<double>(b));
  return a == b;
}

// Walks the argument's module tree against the traced one (Note [Module guards]).
bool check_module(const ModuleGuard& g, const nn::Module& root, std::string* why) {
  size_t i = 0;
  const ModuleGuard::Entry* failed = nullptr;
  const nn::Module* actual = nullptr;
  root.visit_modules([&](const std::string&, int, const nn::Module& m) {
    if (failed != nullptr) return;
    const ModuleGuard::Entry* e = i < g.tree.size() ? &g.tree[i] : nullptr;
    ++i;
    bool same = e != nullptr && e->id == m.id() && e->version == m.version() &&
                e->training == m.is_training() && e->attributes.size() == m.attributes().size();
    for (size_t k = 0; same && k < e->attributes.size(); ++k)
      same = same_attribute(e->attributes[k], m.attributes()[k].second);
    if (!same) {
      failed = e != nullptr ? e : &g.tree.back();
      actual = &m;
    }
  });
  if (failed == nullptr && i == g.tree.size()) return true;
  if (why == nullptr) return false;
  if (failed == nullptr) {
    *why = fmt::format("{} has {} modules in its tree, {} when traced", g.source, i, g.tree.size());
  } else if (failed->id != actual->id()) {
    *why = fmt::format("{} is a different module than when traced ({} id {}, traced {} id {})",
                       failed->path, actual->name(), actual->id(), failed->type, failed->id);
  } else if (failed->version != actual->version()) {
    *why = fmt::format("{} ({}) changed since it was traced: {}", failed->path, failed->type,
                       actual->last_change());
  } else if (failed->training != actual->is_training()) {
    *why =
        fmt::format("{}'s training mode changed from {} to {}", failed->path,
                    failed->training ? "train" : "eval", actual->is_training() ? "train" : "eval");
  } else {
    for (size_t k = 0; k < failed->attributes.size(); ++k)
      if (!same_attribute(failed->attributes[k], actual->attributes()[k].second))
        *why = fmt::format("attribute {}.{} changed from {} to {}", failed->path,
                           actual->attributes()[k].first, attribute_str(failed->attributes[k]),
                           attribute_str(actual->attributes()[k].second));
  }
  return false;
}

std::string range_str(int64_t lo, int64_t hi) {
  return fmt::format("[{}, {}]", lo, hi == INT64_MAX ? std::string("inf") : std::to_string(hi));
}

// Checks one tensor guard; on failure writes the reason when `why` is set.
bool check_tensor(const TensorGuard& g, const SymbolTable& table, const Tensor& t,
                  std::vector<int64_t>& values, std::string* why) {
  const std::string& src = g.where.source;
  auto fail = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  if (!t.defined()) return fail(fmt::format("{} is now an undefined tensor", src));
  if (g.identity.defined() && t.impl() != g.identity.impl())
    return fail(fmt::format("{} is a different tensor than when traced", src));
  if (t.dtype() != g.dtype)
    return fail(fmt::format("dtype of {} changed from {} to {}", src, dtype_name(g.dtype),
                            dtype_name(t.dtype())));
  if (t.dim() != static_cast<int64_t>(g.sizes.size()))
    return fail(fmt::format("rank of {} changed from {} to {}", src, g.sizes.size(), t.dim()));
  if (t.requires_grad() != g.requires_grad)
    return fail(fmt::format("requires_grad of {} changed from {} to {}", src, g.requires_grad,
                            t.requires_grad()));
  const IntArrayRef sizes = t.sizes();
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    const TensorGuard::Dim& dim = g.sizes[d];
    const int64_t actual = sizes[d];
    switch (dim.kind) {
      case TensorGuard::Dim::Kind::Static:
        if (actual != dim.value)
          return fail(
              fmt::format("size of {} dim {} changed from {} to {}", src, d, dim.value, actual));
        break;
      case TensorGuard::Dim::Kind::Bind:
        values[dim.value] = actual;
        break;
      case TensorGuard::Dim::Kind::Same:
        if (actual != values[dim.value])
          return fail(fmt::format(
              "size of {} dim {} is {} but {} is {}; they shared the symbol {} when traced "
              "(duck sizing)",
              src, d, actual, table.sources[dim.value], values[dim.value],
              sym::to_string(table.symbols[dim.value])));
        break;
    }
  }
  if (g.contiguous) {
    if (!t.is_contiguous()) return fail(fmt::format("{} is no longer contiguous", src));
  } else {
    const IntArrayRef strides = t.strides();
    for (size_t d = 0; d < g.strides.size(); ++d)
      if (strides[d] != g.strides[d])
        return fail(fmt::format("stride of {} dim {} changed from {} to {}", src, d, g.strides[d],
                                strides[d]));
  }
  return true;
}

bool storages_overlap(const Tensor& a, const Tensor& b) {
  const StorageImpl& x = *a.impl()->storage();
  const StorageImpl& y = *b.impl()->storage();
  if (&x == &y) return true;
  const auto* xb = static_cast<const char*>(x.data());
  const auto* yb = static_cast<const char*>(y.data());
  if (xb == nullptr || yb == nullptr || x.nbytes() == 0 || y.nbytes() == 0) return false;
  return xb < yb + y.nbytes() && yb < xb + x.nbytes();
}

const Tensor* defined_tensor(const ArgValue& v) {
  const Tensor* t = std::get_if<Tensor>(&v);
  return t != nullptr && t->defined() ? t : nullptr;
}

// Walks every pair of tensor arguments in order; `fn(i, j, overlap)` returns false to stop.
template <typename F>
bool for_each_arg_pair(const std::vector<ArgValue>& args, F&& fn) {
  for (size_t j = 1; j < args.size(); ++j) {
    const Tensor* b = defined_tensor(args[j]);
    if (b == nullptr) continue;
    for (size_t i = 0; i < j; ++i) {
      const Tensor* a = defined_tensor(args[i]);
      if (a != nullptr && !fn(static_cast<int>(i), static_cast<int>(j), storages_overlap(*a, *b)))
        return false;
    }
  }
  return true;
}

}  // namespace

std::vector<std::pair<int, int>> overlapping_args(const std::vector<ArgValue>& args) {
  std::vector<std::pair<int, int>> out;
  for_each_arg_pair(args, [&](int i, int j, bool overlap) {
    if (overlap) out.emplace_back(i, j);
    return true;
  });
  return out;
}

size_t GuardSet::size() const {
  size_t n = scalars.size() + undefined_tensors.size() + ranges.size() + shape_guards.size() +
             values.size() + (grad_mode ? 1 : 0);
  for (const ModuleGuard& m : modules) n += 3 * m.tree.size();
  for (const TensorGuard& t : tensors) n += 4 + t.sizes.size();
  return n;
}

int SymbolTable::index_of(sym::ExprPtr s) const {
  for (size_t i = 0; i < symbols.size(); ++i)
    if (symbols[i] == s) return static_cast<int>(i);
  return -1;
}

int SymbolTable::add(sym::ExprPtr s, std::string source) {
  symbols.push_back(s);
  sources.push_back(std::move(source));
  return static_cast<int>(symbols.size()) - 1;
}

const Tensor& resolve(const InputRef& ref, const std::vector<ArgValue>& args) {
  switch (ref.kind) {
    case InputRef::Kind::Arg:
      return std::get<Tensor>(args[ref.index]);
    case InputRef::Kind::Slot:
      return *ref.slot;
    case InputRef::Kind::Constant:
      return ref.constant;
    case InputRef::Kind::Grad:
      return ref.constant.grad();
    case InputRef::Kind::Prior:
      break;
  }
  throw Error("internal: resolve() called on a segment output reference");
}

bool check_guards(const GuardSet& guards, const SymbolTable& table,
                  const std::vector<ArgValue>& args, std::vector<int64_t>& values,
                  std::string* why) {
  auto fail = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  if (guards.grad_mode && *guards.grad_mode != GradMode::is_enabled())
    return fail(fmt::format("grad mode changed from {} to {}",
                            *guards.grad_mode ? "enabled" : "disabled",
                            *guards.grad_mode ? "disabled" : "enabled"));
  for (const ScalarGuard& s : guards.scalars)
    if (!same_scalar(s.value, args[s.arg]))
      return fail(fmt::format("arg{} changed from {} to {}", s.arg, arg_value_str(s.value),
                              arg_value_str(args[s.arg])));
  for (int arg : guards.undefined_tensors)
    if (std::get<Tensor>(args[arg]).defined())
      return fail(fmt::format("arg{} was an undefined tensor and now is defined", arg));
  for (const ModuleGuard& m : guards.modules)
    if (!check_module(m, *std::get<nn::Module*>(args[m.arg]), why)) return false;
  size_t overlap_index = 0;
  std::pair<int, int> changed{-1, -1};
  const bool same_overlaps = for_each_arg_pair(args, [&](int i, int j, bool overlap) {
    const auto& expected = guards.overlapping_args;
    const bool expect =
        overlap_index < expected.size() && expected[overlap_index] == std::make_pair(i, j);
    if (expect) ++overlap_index;
    if (overlap == expect) return true;
    changed = {i, j};
    return false;
  });
  if (!same_overlaps) {
    const auto& traced = guards.overlapping_args;
    const bool did = std::find(traced.begin(), traced.end(), changed) != traced.end();
    return fail(fmt::format(
        "arg{} and arg{} {} memory; they {} when traced (Note [Input aliasing])", changed.first,
        changed.second, did ? "no longer share" : "now share", did ? "did" : "did not"));
  }
  for (const ValueGuard& g : guards.values)
    if (!g.holds()) return fail(fmt::format("{} no longer holds", g.what));
  for (const TensorGuard& g : guards.tensors)
    if (!check_tensor(g, table, resolve(g.where, args), values, why)) return false;
  for (const SymbolRange& r : guards.ranges) {
    const int64_t v = values[r.symbol];
    if (v < r.lower || v > r.upper)
      return fail(
          fmt::format("{} = {} is outside the range {} of {} (sizes 0 and 1 are "
                      "specialized)",
                      table.sources[r.symbol], v, range_str(r.lower, r.upper),
                      sym::to_string(table.symbols[r.symbol])));
  }
  if (!guards.shape_guards.empty()) {
    auto lookup = [&](sym::ExprPtr s) -> std::optional<int64_t> {
      const int i = table.index_of(s);
      if (i < 0) return std::nullopt;
      return values[i];
    };
    for (const ShapeGuardRef& g : guards.shape_guards) {
      const std::optional<int64_t> ok = sym::evaluate(g.condition, lookup);
      if (!ok || *ok == 0) {
        std::string values_text;
        for (sym::ExprPtr s : sym::free_symbols(g.condition)) {
          const auto v = lookup(s);
          values_text += fmt::format("{}{} = {}", values_text.empty() ? "" : ", ",
                                     sym::to_string(s), v ? std::to_string(*v) : "?");
        }
        return fail(fmt::format("guard {} (from {}) is false: {}", sym::to_string(g.condition),
                                g.origin, values_text));
      }
    }
  }
  return true;
}

std::string describe(const GuardSet& guards, const SymbolTable& table) {
  std::string out;
  if (guards.grad_mode)
    out += fmt::format("grad mode is {}\n", *guards.grad_mode ? "enabled" : "disabled");
  for (const ScalarGuard& s : guards.scalars)
    out += fmt::format("arg{} == {}\n", s.arg, arg_value_str(s.value));
  for (int arg : guards.undefined_tensors) out += fmt::format("arg{} is undefined\n", arg);
  for (const auto& [i, j] : guards.overlapping_args)
    out += fmt::format("arg{} and arg{} share memory\n", i, j);
  for (const ModuleGuard& m : guards.modules)
    for (const ModuleGuard::Entry& e : m.tree) {
      out += fmt::format("{} is the {} traced (id {}, version {}), in {} mode", e.path, e.type,
                         e.id, e.version, e.training ? "train" : "eval");
      for (const nn::AttributeValue& a : e.attributes)
        out += fmt::format(", attribute == {}", attribute_str(a));
      out += "\n";
    }
  for (const TensorGuard& g : guards.tensors) {
    std::string dims;
    for (const TensorGuard::Dim& d : g.sizes) {
      if (!dims.empty()) dims += ", ";
      dims += d.kind == TensorGuard::Dim::Kind::Static ? std::to_string(d.value)
                                                       : sym::to_string(table.symbols[d.value]);
    }
    std::string layout = "contiguous";
    if (!g.contiguous) {
      layout = "strides (";
      for (size_t i = 0; i < g.strides.size(); ++i)
        layout += (i ? ", " : "") + std::to_string(g.strides[i]);
      layout += ")";
    }
    out += fmt::format("{}: {}[{}] {}, requires_grad={}{}\n", g.where.source, dtype_name(g.dtype),
                       dims, layout, g.requires_grad,
                       g.identity.defined() ? ", same tensor object" : "");
  }
  for (const SymbolRange& r : guards.ranges)
    out += fmt::format("{} ({}) in {}\n", sym::to_string(table.symbols[r.symbol]),
                       table.sources[r.symbol], range_str(r.lower, r.upper));
  for (const ShapeGuardRef& g : guards.shape_guards)
    out += fmt::format("{}  # {}\n", sym::to_string(g.condition), g.origin);
  for (const ValueGuard& g : guards.values) out += g.what + "\n";
  return out;
}

}  // namespace kiln::capture
