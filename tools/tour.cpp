// `kiln tour`: a short tour of the eager API. Every line is ordinary LibTorch-style C++; the
// printout shows what it computed.
#include <iostream>
#include <string_view>

#include "kiln/kiln.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace {

void section(std::string_view title) { std::cout << "\n== " << title << "\n"; }

void show(std::string_view code, const Tensor& t) { std::cout << code << "\n  = " << t << "\n"; }

void creation() {
  section("Creation: every dtype, unsigned ones included");
  show("kiln::arange(6).view({2, 3})", arange(6).view({2, 3}));
  show("kiln::zeros({2, 2}, kiln::kUInt16)", zeros({2, 2}, kUInt16));
  show("kiln::full({3}, 2.5, kiln::kBFloat16)", full({3}, 2.5, kBFloat16));
  show("kiln::arange(0.0, 1.0, 0.25, kiln::kFloat64)", arange(0.0, 1.0, 0.25, kFloat64));
  show("kiln::tensor({1, 0, 2}, kiln::kBool)", tensor({1, 0, 2}, kBool));
}

void views() {
  section("Views share storage");
  Tensor base = arange(6).view({2, 3});
  Tensor column = base.select(1, 0);  // base[:, 0]
  Tensor transposed = base.t();
  column.fill_(100);
  show("base after base.select(1, 0).fill_(100)", base);
  show("base.t()", transposed);
  std::cout << "base.t().is_alias_of(base) = " << std::boolalpha << transposed.is_alias_of(base)
            << ", base.t().is_contiguous() = " << transposed.is_contiguous() << "\n";
}

void arithmetic() {
  section("Broadcasting arithmetic and type promotion");
  Tensor col = arange(3).view({3, 1}).to(kFloat32);
  Tensor row = arange(4).to(kFloat32);
  show("col{3,1} * 10 + row{4}", col * 10 + row);
  show("uint8 [1, 2] + int8 [-1, -2]  (promotes to int16)",
       tensor({1, 2}, kUInt8) + tensor({-1, -2}, kInt8));

  section("Unsigned integers wrap around");
  show("uint8 [250, 255] + 10", tensor({250, 255}, kUInt8) + 10);
  show("uint16 [0, 1] - 2", tensor({0, 1}, kUInt16) - 2);
  show("uint32 [1] << 31", tensor({1}, kUInt32) << 31);
}

void matmul_softmax_reduce() {
  section("Matrix product, softmax, reductions");
  Tensor a = arange(6).view({2, 3}).to(kFloat32);
  Tensor b = ones({3, 2});
  show("a{2,3}.mm(ones{3,2})", a.mm(b));
  Tensor logits = tensor({1.0, 2.0, 3.0, 1.0, 1.0, 1.0}).view({2, 3});
  show("logits.softmax(-1)", logits.softmax(-1));
  show("a.sum({1})", a.sum({1}));
  show("a.mean()", a.mean());
  show("a.amax({0})", a.amax({0}));
}

void meta_tensors() {
  section("Meta tensors: shapes and dtypes without data");
  Tensor x = empty({4096, 1024}, TensorOptions(kFloat32).device(kMeta));
  Tensor w = empty({1024, 512}, TensorOptions(kBFloat16).device(kMeta));
  Tensor y = x.mm(w.to(kFloat32)).softmax(-1);
  show("empty({4096, 1024}, meta).mm(w{1024, 512}).softmax(-1)", y);
}

void errors() {
  section("Bad input raises a kiln::Error that says what to do");
  try {
    Tensor bad = ones({2, 3}) + ones({4});
    std::cout << "unexpected: " << bad << "\n";
  } catch (const ShapeError& e) {
    std::cout << "kiln::ShapeError: " << e.what() << "\n";
  }
  try {
    Tensor bad = tensor({1}, kUInt64) + tensor({1}, kInt64);
    std::cout << "unexpected: " << bad << "\n";
  } catch (const DTypeError& e) {
    std::cout << "kiln::DTypeError: " << e.what() << "\n";
  }
}

}  // namespace

int run_tour() {
  std::cout << "Kiln eager demo\n";
  creation();
  views();
  arithmetic();
  matmul_softmax_reduce();
  meta_tensors();
  errors();
  return 0;
}

}  // namespace kiln::tools
