// Uses only the installed public API: if this builds and prints, the package is self-contained
// (headers, library, CMake config and its dependencies).
#include <iostream>

#include "kiln/kiln.h"

int main() {
  kiln::Tensor z = kiln::zeros({2, 3}, kiln::kUInt16);
  kiln::Tensor a = kiln::arange(6).view({2, 3}).to(kiln::kFloat32);
  std::cout << z << "\n" << a << "\n";
  if (a.sizes()[1] != 3 || a.dtype() != kiln::kFloat32 || a.to_vector<float>()[5] != 5.0f) {
    std::cerr << "kiln_consumer: unexpected values\n";
    return 1;
  }
  std::cout << "kiln_consumer: ok\n";
  return 0;
}
