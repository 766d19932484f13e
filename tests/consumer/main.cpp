// Uses only the installed public API: if this builds and prints, the package is self-contained
// (headers, library, CMake config and its dependencies).
#include <iostream>

#include "kiln/compile.h"
#include "kiln/kiln.h"

int main() {
  kiln::Tensor z = kiln::zeros({2, 3}, kiln::kUInt16);
  kiln::Tensor a = kiln::arange(6).view({2, 3}).to(kiln::kFloat32);
  std::cout << z << "\n" << a << "\n";
  if (a.sizes()[1] != 3 || a.dtype() != kiln::kFloat32 || a.to_vector<float>()[5] != 5.0f) {
    std::cerr << "kiln_consumer: unexpected values\n";
    return 1;
  }
  // kiln::compile from the installed headers: traced once, then a cache hit.
  auto doubled = kiln::compile([](const kiln::Tensor& x) { return x * 2 + 1; });
  const kiln::Tensor y = doubled(a);
  const kiln::Tensor y2 = doubled(a);
  if (y.to_vector<float>()[5] != 11.0f || y2.to_vector<float>()[0] != 1.0f ||
      doubled.stats().compiles != 1 || doubled.stats().cache_hits != 1) {
    std::cerr << "kiln_consumer: kiln::compile gave unexpected results\n";
    return 1;
  }
  std::cout << "kiln_consumer: ok\n";
  return 0;
}
