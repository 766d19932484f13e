// The reference interpreter (interpreter_handler.h); Note [Interpreting a define-by-run body].
#include "src/lower/handlers/interpreter_handler.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "kiln/error.h"
#include "src/core/tensor_factory.h"
#include "src/lower/handlers/loop_symbols.h"

namespace kiln::lower {
namespace {

// The value a reduction over no elements gives; max/min/argmax/argmin have none (eager refuses
// them on empty inputs).
Element reduction_identity(ReductionType type, ScalarType result_dtype) {
  switch (type) {
    case ReductionType::sum:
    case ReductionType::welford_m2:
    case ReductionType::any:
      return make_int_element(0, result_dtype);
    case ReductionType::prod:
    case ReductionType::all:
      return make_int_element(1, result_dtype);
    case ReductionType::welford_mean:
      return make_float_element(std::numeric_limits<double>::quiet_NaN(), result_dtype);
    default:
      break;
  }
  throw ValueError(fmt::format(
      "lower interpreter: a {} reduction over zero elements has no identity (eager raises for "
      "empty inputs too); the lowering must not produce it",
      name_of(type)));
}

std::vector<int64_t> evaluate_sizes(const std::vector<sym::ExprPtr>& ranges,
                                    const InterpreterHandler& h, std::string_view what) {
  std::vector<int64_t> sizes;
  for (sym::ExprPtr r : ranges) {
    const int64_t n = h.evaluate_index(r);
    KILN_CHECK(n >= 0, ValueError, "lower interpreter: {} range {} evaluates to {} (negative)",
               what, sym::to_string(r), n);
    sizes.push_back(n);
  }
  return sizes;
}

int64_t product(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// Binds vars to the row-major multi-index of `linear` within `sizes`.
void bind_linear(InterpreterHandler& h, const std::vector<sym::ExprPtr>& vars,
                 const std::vector<int64_t>& sizes, int64_t linear) {
  for (size_t d = sizes.size(); d-- > 0;) {
    h.bind(vars[d], linear % sizes[d]);
    linear /= sizes[d];
  }
}

void write_element(const Tensor& out, int64_t linear, Element e) {
  visit_dtype(out.dtype(),
              [&]<typename T>() { static_cast<T*>(out.data_ptr())[linear] = e.get<T>(); });
}

void check_result_dtype(Element e, ScalarType expected, std::string_view what) {
  KILN_CHECK(
      e.dtype() == expected, ValueError,
      "lower interpreter: the {} body produced a value of dtype {} for a node of dtype {}; the "
      "lowering must cast before storing (lower::cast)",
      what, dtype_name(e.dtype()), dtype_name(expected));
}

// The extent of a tensor: how many elements from its data pointer its sizes and strides reach.
int64_t extent_of(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.sizes()[d] - 1) * t.strides()[d];
  return last + 1;
}

}  // namespace

// ---- reduction accumulators -------------------------------------------------------------------

// One running reduction over the values fed to it, in the dtype's opmath type (float for
// float16/bfloat16, as eager accumulates).
class InterpreterHandler::Accumulator {
 public:
  Accumulator(ReductionType type, ScalarType dtype) : type_(type), dtype_(dtype) {}

  // Feeds the next value; returns the reduced value so far.
  Element feed(Element v) {
    KILN_CHECK(v.dtype() == dtype_, ValueError,
               "lower interpreter: a {} reduction fed a value of dtype {} after values of dtype {}",
               name_of(type_), dtype_name(v.dtype()), dtype_name(dtype_));
    return visit_dtype(dtype_, [&]<typename T>() { return feed_typed<T>(v.get<T>()); });
  }

 private:
  template <typename T>
  Element feed_typed(T value) {
    using M = opmath_t<T>;
    const Element x = Element::of(static_cast<M>(value));
    const bool first = count_ == 0;
    const int64_t position = count_++;
    auto snapshot = [&] { return convert(acc_, dtype_); };
    switch (type_) {
      case ReductionType::sum:
        acc_ = first ? x : apply(BinaryOp::add, acc_, x);
        return snapshot();
      case ReductionType::prod:
        acc_ = first ? x : apply(BinaryOp::mul, acc_, x);
        return snapshot();
      case ReductionType::max:
        acc_ = first ? x : apply(BinaryOp::maximum, acc_, x);
        return snapshot();
      case ReductionType::min:
        acc_ = first ? x : apply(BinaryOp::minimum, acc_, x);
        return snapshot();
      case ReductionType::any:
        acc_ = Element::of((!first && acc_.get<bool>()) || truth(x));
        return acc_;
      case ReductionType::all:
        acc_ = Element::of((first || acc_.get<bool>()) && truth(x));
        return acc_;
      case ReductionType::argmax:
      case ReductionType::argmin: {
        // Eager's rule (arg_reduce in src/kernels/cpu/reduce_stats.cpp): the first extreme wins,
        // NaN counts as the extreme and the first NaN is final.
        const M v = x.get<M>();
        if (first) {
          acc_ = x;
        } else {
          const M best = acc_.get<M>();
          bool better = type_ == ReductionType::argmax ? v > best : v < best;
          if constexpr (is_floating_v<T>) {
            if (std::isnan(best))
              better = false;
            else
              better = better || std::isnan(v);
          }
          if (better) acc_ = x, best_index_ = position;
        }
        return Element::of(best_index_);
      }
      case ReductionType::welford_mean:
      case ReductionType::welford_m2: {
        if constexpr (!is_floating_v<T>) {
          throw DTypeError(fmt::format("lower interpreter: {} needs floating values, got dtype {}",
                                       name_of(type_), dtype_name(dtype_)));
        } else {
          // Welford's update: the mean and the sum of squared deviations, one value at a time.
          M mean = first ? M(0) : mean_.get<M>();
          M m2 = first ? M(0) : m2_.get<M>();
          const M v = x.get<M>();
          const M delta = v - mean;
          mean += delta / static_cast<M>(count_);
          m2 += delta * (v - mean);
          mean_ = Element::of(mean);
          m2_ = Element::of(m2);
          return convert(type_ == ReductionType::welford_mean ? mean_ : m2_, dtype_);
        }
      }
    }
    __builtin_unreachable();
  }

  ReductionType type_;
  ScalarType dtype_;
  int64_t count_ = 0;
  Element acc_;  // running value (opmath dtype); for argmax/argmin the best value
  int64_t best_index_ = 0;
  Element mean_, m2_;
};

// ---- the handler -------------------------------------------------------------------------------

InterpreterHandler::InterpreterHandler(BufferReader reader) : reader_(std::move(reader)) {}
InterpreterHandler::~InterpreterHandler() = default;

void InterpreterHandler::bind_all(const std::unordered_map<sym::ExprPtr, int64_t>& values) {
  for (const auto& [s, v] : values) bindings_[s] = v;
}

int64_t InterpreterHandler::evaluate_index(sym::ExprPtr e) const {
  sym::ExprPtr unbound = nullptr;
  std::optional<int64_t> v = sym::evaluate(e, [&](sym::ExprPtr s) -> std::optional<int64_t> {
    auto it = bindings_.find(s);
    if (it == bindings_.end()) {
      unbound = s;
      return std::nullopt;
    }
    return it->second;
  });
  KILN_CHECK(
      v.has_value(), ValueError,
      "lower interpreter: index expression {} uses symbol {}, which has no value; pass it in "
      "symbol_values (size symbols) or bind it (loop variables)",
      sym::to_string(e), unbound ? sym::to_string(unbound) : "?");
  return *v;
}

Element InterpreterHandler::value(Val v) const {
  KILN_CHECK(
      v.id >= 0 && static_cast<size_t>(v.id) < values_.size(), ValueError,
      "lower interpreter: Val {} is not a value of the current element (it has {} values); a "
      "Val is valid only in the body call that made it",
      v.id, values_.size());
  const Element& e = values_[static_cast<size_t>(v.id)];
  KILN_CHECK(e.dtype() == v.dtype, ValueError,
             "lower interpreter: Val {} claims dtype {} but holds {}", v.id, dtype_name(v.dtype),
             e.to_string());
  return e;
}

void InterpreterHandler::begin_element() {
  values_.clear();
  accumulators_.clear();
  next_accumulator_ = 0;
}

Val InterpreterHandler::push(Element e) {
  values_.push_back(e);
  return Val{static_cast<int32_t>(values_.size() - 1), e.dtype()};
}

Val InterpreterHandler::load(BufferRef buffer, sym::ExprPtr index) {
  const Element e = reader_(buffer, evaluate_index(index));
  KILN_CHECK(e.dtype() == buffer.dtype, ValueError,
             "lower interpreter: buffer '{}' was read as dtype {} but holds {}", buffer.name,
             dtype_name(buffer.dtype), dtype_name(e.dtype()));
  return push(e);
}

void InterpreterHandler::store(BufferRef buffer, sym::ExprPtr index, Val v) {
  stores_.push_back(
      {std::string(buffer.name), evaluate_index(index), convert(value(v), buffer.dtype), false});
}

void InterpreterHandler::store_reduction(BufferRef buffer, sym::ExprPtr index, Val v) {
  stores_.push_back(
      {std::string(buffer.name), evaluate_index(index), convert(value(v), buffer.dtype), true});
}

Val InterpreterHandler::index_expr(sym::ExprPtr expr, ScalarType dtype) {
  return push(make_int_element(evaluate_index(expr), dtype));
}

Val InterpreterHandler::constant_int(int64_t i, ScalarType dtype) {
  return push(make_int_element(i, dtype));
}
Val InterpreterHandler::constant_float(double f, ScalarType dtype) {
  return push(make_float_element(f, dtype));
}
Val InterpreterHandler::to_dtype(Val x, ScalarType dtype) { return push(convert(value(x), dtype)); }
Val InterpreterHandler::unary(UnaryOp op, Val x) { return push(apply(op, value(x))); }
Val InterpreterHandler::binary(BinaryOp op, Val a, Val b) {
  return push(apply(op, value(a), value(b)));
}

Val InterpreterHandler::where(Val cond, Val a, Val b) {
  const Element c = value(cond), x = value(a), y = value(b);
  KILN_CHECK(c.dtype() == kBool && x.dtype() == y.dtype(), ValueError,
             "lower interpreter: where needs a bool condition and branches of one dtype, got {}, "
             "{} and {}",
             dtype_name(c.dtype()), dtype_name(x.dtype()), dtype_name(y.dtype()));
  return push(c.get<bool>() ? x : y);
}

Val InterpreterHandler::reduction(ReductionType type, Val v) {
  const Element x = value(v);
  const size_t k = next_accumulator_++;
  if (k == accumulators_.size()) accumulators_.emplace_back(type, x.dtype());
  return push(accumulators_[k].feed(x));
}

// ---- reading tensors ---------------------------------------------------------------------------

InterpreterHandler::BufferReader tensor_reader(
    std::function<Tensor(std::string_view name)> buffers) {
  return [buffers = std::move(buffers)](BufferRef buffer, int64_t offset) -> Element {
    const Tensor t = buffers(buffer.name);
    KILN_CHECK(t.defined(), ValueError,
               "lower interpreter: a body loads buffer '{}', which is unknown", buffer.name);
    KILN_CHECK(t.dtype() == buffer.dtype, ValueError,
               "lower interpreter: buffer '{}' is loaded as dtype {} but its tensor is {}",
               buffer.name, dtype_name(buffer.dtype), dtype_name(t.dtype()));
    const int64_t extent = extent_of(t);
    KILN_CHECK(
        offset >= 0 && offset < extent, ValueError,
        "lower interpreter: load of buffer '{}' at element offset {} is out of bounds (its tensor "
        "reaches {} elements from its data pointer)",
        buffer.name, offset, extent);
    return visit_dtype(t.dtype(), [&]<typename T>() {
      return Element::of(static_cast<const T*>(t.data_ptr())[offset]);
    });
  };
}

// ---- whole nodes -------------------------------------------------------------------------------

Tensor evaluate(const Pointwise& pw, const std::function<Tensor(std::string_view name)>& buffers,
                const std::unordered_map<sym::ExprPtr, int64_t>& symbol_values) {
  InterpreterHandler h(tensor_reader(buffers));
  h.bind_all(symbol_values);
  const std::vector<int64_t> sizes = evaluate_sizes(pw.ranges, h, "pointwise");
  Tensor out = empty_tensor(sizes, pw.dtype);
  const std::vector<sym::ExprPtr> vars = loop_symbols("i", sizes.size());
  HandlerScope scope(h);
  for (int64_t linear = 0, n = product(sizes); linear < n; ++linear) {
    bind_linear(h, vars, sizes, linear);
    h.begin_element();
    const Element e = h.value(pw.inner_fn(vars));
    check_result_dtype(e, pw.dtype, "pointwise");
    write_element(out, linear, e);
  }
  return out;
}

Tensor evaluate(const Reduction& red, const std::function<Tensor(std::string_view name)>& buffers,
                const std::unordered_map<sym::ExprPtr, int64_t>& symbol_values) {
  InterpreterHandler h(tensor_reader(buffers));
  h.bind_all(symbol_values);
  const std::vector<int64_t> sizes = evaluate_sizes(red.ranges, h, "reduction output");
  const std::vector<int64_t> rsizes = evaluate_sizes(red.reduction_ranges, h, "reduction");
  Tensor out = empty_tensor(sizes, red.dtype);
  const std::vector<sym::ExprPtr> vars = loop_symbols("i", sizes.size());
  const std::vector<sym::ExprPtr> rvars = loop_symbols("r", rsizes.size());
  const int64_t rnumel = product(rsizes);
  HandlerScope scope(h);
  for (int64_t linear = 0, n = product(sizes); linear < n; ++linear) {
    bind_linear(h, vars, sizes, linear);
    h.begin_element();
    Element result = rnumel == 0 ? reduction_identity(red.type, red.dtype) : Element();
    for (int64_t r = 0; r < rnumel; ++r) {
      bind_linear(h, rvars, rsizes, r);
      h.begin_iteration();
      const Val v = red.inner_fn(vars, rvars);
      const Val reduced = h.reduction(red.type, v);
      if (r == rnumel - 1) result = h.value(reduced);
    }
    check_result_dtype(result, red.dtype, fmt::format("{} reduction", name_of(red.type)));
    write_element(out, linear, result);
  }
  return out;
}

Tensor evaluate(const ComputedBuffer& node,
                const std::function<Tensor(std::string_view name)>& buffers,
                const std::unordered_map<sym::ExprPtr, int64_t>& symbol_values) {
  return std::visit([&](const auto& loops) { return evaluate(loops, buffers, symbol_values); },
                    node.loops());
}

}  // namespace kiln::lower
