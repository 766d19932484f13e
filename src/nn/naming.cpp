#include "src/nn/naming.h"

#include <fmt/format.h>

namespace kiln::nn {

std::string py_float(double value) {
  // fmt's shortest round-trip form matches Python's repr except that Python marks integral
  // values as floats ("1.0", not "1").
  std::string s = fmt::format("{}", value);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

}  // namespace kiln::nn
