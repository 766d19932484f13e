#include "kiln/dtype.h"

#include "kiln/error.h"

namespace kiln {

std::string_view dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "bool";
    case ScalarType::UInt8:
      return "uint8";
    case ScalarType::UInt16:
      return "uint16";
    case ScalarType::UInt32:
      return "uint32";
    case ScalarType::UInt64:
      return "uint64";
    case ScalarType::Int8:
      return "int8";
    case ScalarType::Int16:
      return "int16";
    case ScalarType::Int32:
      return "int32";
    case ScalarType::Int64:
      return "int64";
    case ScalarType::Float16:
      return "float16";
    case ScalarType::BFloat16:
      return "bfloat16";
    case ScalarType::Float32:
      return "float32";
    case ScalarType::Float64:
      return "float64";
  }
  return "invalid";
}

ScalarType dtype_from_name(std::string_view name) {
  for (ScalarType t : kAllScalarTypes)
    if (dtype_name(t) == name) return t;
  throw ValueError(
      fmt::format("unknown dtype '{}'; expected one of bool, uint8, uint16, uint32, "
                  "uint64, int8, int16, int32, int64, float16, bfloat16, float32, "
                  "float64",
                  name));
}

}  // namespace kiln
