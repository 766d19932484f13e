#include "src/dispatch/ivalue.h"

namespace kiln {

Scalar IValue::scalar() const {
  if (is_scalar()) return std::get<Scalar>(v_);
  if (is_int()) return Scalar(to_int());
  if (is_double()) return Scalar(std::get<double>(v_));
  if (is_bool()) return Scalar(std::get<bool>(v_));
  throw Error(fmt::format("internal: expected a boxed Scalar but got {}", type_name()));
}

IntArrayRef IValue::specialize_int_list() const {
  // The stack owns this IValue (it is never a const object); specializing is a cache fill.
  auto& list = const_cast<SymDimVector&>(std::get<SymDimVector>(v_));
  for (SymInt& s : list) s = SymInt(s.guard_int());
  return IntArrayRef(reinterpret_cast<const int64_t*>(list.data()), list.size());
}

std::string IValue::type_name() const {
  static const char* names[] = {"None",  "Tensor",   "int",        "float",  "bool", "Scalar",
                                "int[]", "Tensor[]", "ScalarType", "Device", "str"};
  return names[v_.index()];
}

}  // namespace kiln
