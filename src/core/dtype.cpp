#include "kiln/dtype.h"

#include <ostream>

#include "kiln/error.h"
#include "kiln/storage.h"

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

std::ostream& operator<<(std::ostream& os, ScalarType t) {
  // LibTorch prints a dtype as its C++ type (caffe2::TypeMeta's name).
  switch (t) {
    case ScalarType::Bool:
      return os << "bool";
    case ScalarType::UInt8:
      return os << "unsigned char";
    case ScalarType::UInt16:
      return os << "unsigned short";
    case ScalarType::UInt32:
      return os << "unsigned int";
    case ScalarType::UInt64:
      return os << "unsigned long";
    case ScalarType::Int8:
      return os << "signed char";
    case ScalarType::Int16:
      return os << "short int";
    case ScalarType::Int32:
      return os << "int";
    case ScalarType::Int64:
      return os << "long int";
    case ScalarType::Float16:
      return os << "c10::Half";
    case ScalarType::BFloat16:
      return os << "c10::BFloat16";
    case ScalarType::Float32:
      return os << "float";
    case ScalarType::Float64:
      return os << "double";
  }
  return os << "invalid";
}

std::ostream& operator<<(std::ostream& os, Device device) {
  return os << (device == Device::Meta ? "meta" : "cpu");
}

}  // namespace kiln
