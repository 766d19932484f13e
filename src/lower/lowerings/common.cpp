#include "src/lower/lowerings/common.h"

#include "kiln/error.h"
#include "kiln/ops/creation.h"
#include "src/core/promotion.h"

namespace kiln::lower {

std::vector<ExprPtr> to_exprs(const SymDimVector& sizes) {
  std::vector<ExprPtr> out;
  out.reserve(sizes.size());
  for (SymInt s : sizes) out.push_back(to_expr(s));
  return out;
}

std::vector<ExprPtr> to_exprs(SymIntArrayRef sizes) {
  std::vector<ExprPtr> out;
  out.reserve(sizes.size());
  for (SymInt s : sizes) out.push_back(to_expr(s));
  return out;
}

const TensorBox& arg_box(GraphLowering& l, const graph::Node& node, size_t i) {
  KILN_CHECK(i < node.args().size() && node.args()[i].is_value(), ValueError,
             "lower: argument {} of {} is not a tensor", i, node.op_def().name);
  return l.box(node.args()[i].as_value());
}

const IValue& arg_constant(const graph::Node& node, size_t i) {
  KILN_CHECK(i < node.args().size() && node.args()[i].is_constant(), ValueError,
             "lower: argument {} of {} is not a constant", i, node.op_def().name);
  return node.args()[i].as_constant();
}

bool has_arg(const graph::Node& node, size_t i) {
  if (i >= node.args().size()) return false;
  const graph::Arg& a = node.args()[i];
  return !(a.is_constant() && a.as_constant().is_none());
}

const graph::TensorMeta& out_meta(const graph::Node& node, size_t i) {
  return node.output(i)->meta();
}

ExprPtr broadcast_index(ExprPtr from, ExprPtr to, ExprPtr i) {
  if (from == to) return i;
  if (from == sym::integer(1)) return sym::integer(0);
  if (from->is_integer()) return i;  // not 1, so the meta function found it equal to `to`
  // A symbolic size that differs from `to` as an expression was accepted by the meta function
  // either as 1 (a compound size such as (s0 + 1)//3, or a symbol without 0/1 specialization,
  // guarded to 1: Note [Broadcasting symbolic sizes] in src/core/shape.cpp) or as equal to `to`
  // (s0 + s3 + 1 against a 6 that a backward formula read with guard_int). The lowering has no
  // ShapeEnv to tell which; i mod from is right in both: 0 when from == 1, and i when from == to,
  // since i < to.
  return sym::mod(i, from);
}

Loader broadcast_loader(const TensorBox& box, const std::vector<ExprPtr>& sizes) {
  const size_t n = sizes.size(), m = box.dim();
  KILN_CHECK(m <= n, ShapeError, "lower: cannot broadcast a {}-dim value to {} dims", m, n);
  std::vector<ExprPtr> from(box.sizes().begin(), box.sizes().end());
  std::vector<ExprPtr> to(sizes.end() - static_cast<std::ptrdiff_t>(m), sizes.end());
  Loader inner = box.make_loader();
  if (m == n && from == to) return inner;
  return [inner, from, to, n, m](const Index& index) {
    Index sub(m);
    for (size_t d = 0; d < m; ++d) sub[d] = broadcast_index(from[d], to[d], index[n - m + d]);
    return inner(sub);
  };
}

TensorBox make_pointwise(ScalarType dtype, std::vector<ExprPtr> ranges, Loader fn) {
  return TensorBox::of(
      std::make_shared<StorageBox>(Pointwise{dtype, std::move(ranges), std::move(fn)}));
}

Val scalar_constant(const Scalar& s, ScalarType dtype) {
  // The eager kernels convert a Scalar operand to the compute dtype with Scalar::to<T>.
  switch (dtype) {
    case kBool:
      return ops().constant_int(s.to<bool>() ? 1 : 0, dtype);
    case kUInt8:
      return ops().constant_int(s.to<uint8_t>(), dtype);
    case kUInt16:
      return ops().constant_int(s.to<uint16_t>(), dtype);
    case kUInt32:
      return ops().constant_int(s.to<uint32_t>(), dtype);
    case kUInt64:
      return ops().constant_int(static_cast<int64_t>(s.to<uint64_t>()), dtype);
    case kInt8:
      return ops().constant_int(s.to<int8_t>(), dtype);
    case kInt16:
      return ops().constant_int(s.to<int16_t>(), dtype);
    case kInt32:
      return ops().constant_int(s.to<int32_t>(), dtype);
    case kInt64:
      return ops().constant_int(s.to<int64_t>(), dtype);
    case kFloat32:
      return ops().constant_float(s.to<float>(), dtype);
    default:
      return ops().constant_float(s.to<double>(), dtype);
  }
}

ScalarType operands_result_type(const graph::Node& node, std::string_view op) {
  ResultTypeBuilder b(op);
  for (size_t i = 0; i < 2 && i < node.args().size(); ++i) {
    const graph::Arg& a = node.args()[i];
    if (a.is_value()) {
      const graph::TensorMeta& m = a.as_value()->meta();
      std::vector<SymInt> ones(m.sizes.size(), SymInt(1));
      b.add(kiln::empty(ones, TensorOptions().dtype(m.dtype).device(kMeta)));
    } else if (a.is_constant() && !a.as_constant().is_none()) {
      b.add(a.as_constant().scalar());
    }
  }
  return b.result();
}

int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  KILN_CHECK(dim >= -n && dim < n, IndexError, "{}: dim {} out of range for a {}-dim tensor", op,
             dim, ndim);
  return dim < 0 ? dim + n : dim;
}

}  // namespace kiln::lower
