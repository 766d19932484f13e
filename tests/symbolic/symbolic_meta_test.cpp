// Symbolic shapes through the tensor API and the meta functions: Meta (fake) tensors whose sizes
// are symbols of a ShapeEnv give outputs whose sizes are expressions of those symbols, and code
// that needs a concrete size specializes with a recorded guard (Note [Guarding a symbolic value],
// Note [Specializing symbolic metadata]).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "src/core/shape.h"
#include "src/dispatch/ivalue.h"
#include "src/sym/shape_env.h"

namespace kiln {
namespace {

using sym::ShapeEnv;

std::string str(SymIntArrayRef v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    out += sym::to_string(v[i].expr());
  }
  return out + "]";
}
std::string str(SymInt v) { return sym::to_string(v.expr()); }

Tensor fake(SymIntArrayRef sizes, ScalarType dtype = kFloat32) {
  return empty(sizes, TensorOptions(dtype).device(Device::Meta));
}

class SymbolicMetaTest : public ::testing::Test {
 protected:
  ShapeEnv env;
  ShapeEnv::Scope scope{&env};
  // Different hints, so duck sizing keeps them distinct symbols.
  SymInt s0 = env.create_size_symbol(8, "x.size(0)");
  SymInt s1 = env.create_size_symbol(6, "x.size(1)");
};

TEST_F(SymbolicMetaTest, FakeTensorKeepsSymbolicMetadata) {
  Tensor x = fake({s0, s1, 4});
  EXPECT_EQ(str(x.sym_sizes()), "[s0, s1, 4]");
  EXPECT_EQ(str(x.sym_strides()), str(SymIntArrayRef{s1 * 4, SymInt(4), SymInt(1)}));
  EXPECT_EQ(str(x.sym_numel()), str(s0 * s1 * 4));
  EXPECT_TRUE(x.impl()->has_symbolic_metadata());
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_TRUE(x.size(0).is_symbolic());
  EXPECT_TRUE(env.guards().empty());
}

TEST_F(SymbolicMetaTest, AddBroadcastsWithoutGuards) {
  Tensor a = fake({s0, 1});
  Tensor b = fake({1, s1});
  EXPECT_EQ(str((a + b).sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str((a * 2).sym_sizes()), "[s0, 1]");
  EXPECT_EQ(str(fake({s1}).add(fake({s0, s1})).sym_sizes()), "[s0, s1]");
  EXPECT_TRUE(env.guards().empty());
}

TEST_F(SymbolicMetaTest, AddOfDifferentSymbolsIsAShapeErrorWhenHintsDiffer) {
  // s0 (hint 8) against s1 (hint 6): neither is 1, the guarded equality fails.
  EXPECT_THROW(fake({s0}) + fake({s1}), ShapeError);
  EXPECT_THROW(fake({s0}) + fake({3}), ShapeError);
}

TEST_F(SymbolicMetaTest, InPlaceOpsKeepSelfsShape) {
  Tensor a = fake({s0, s1});
  EXPECT_EQ(str(a.add_(fake({s1})).sym_sizes()), "[s0, s1]");
  EXPECT_THROW(fake({s0, 1}).add_(fake({1, s1})), ShapeError);
}

TEST_F(SymbolicMetaTest, SumOverDims) {
  Tensor x = fake({s0, s1, 4});
  EXPECT_EQ(str(x.sum({1}).sym_sizes()), "[s0, 4]");
  EXPECT_EQ(str(x.sum({0, 2}, /*keepdim=*/true).sym_sizes()), "[1, s1, 1]");
  EXPECT_EQ(str(x.sum().sym_sizes()), "[]");
  EXPECT_EQ(str(x.mean({-1}).sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(x.amax({0}).sym_sizes()), "[s1, 4]");
  EXPECT_TRUE(env.guards().empty());
}

TEST_F(SymbolicMetaTest, ViewMinusOneInfersASymbolicSize) {
  Tensor x = fake({s0, 4});
  Tensor flat = x.view({-1});
  EXPECT_EQ(str(flat.sym_sizes()), str(SymIntArrayRef{s0 * 4}));
  EXPECT_EQ(str(flat.sym_strides()), "[1]");
  // The -1 of `view({x.size(0), -1})` is numel // s0 = 4, decided without a guard.
  EXPECT_EQ(str(x.view({x.size(0), -1}).sym_sizes()), "[s0, 4]");
  EXPECT_EQ(str(flat.view({-1, 2}).sym_sizes()), str(SymIntArrayRef{s0 * 2, SymInt(2)}));
  EXPECT_TRUE(env.guards().empty());
}

TEST_F(SymbolicMetaTest, ViewOfAnIncompatibleSizeIsAShapeError) {
  // 4*s0 = 32 under the hint, not divisible by 3: the guarded divisibility check fails.
  EXPECT_THROW(fake({s0, 4}).view({3, -1}), ShapeError);
  EXPECT_THROW(fake({s0, 4}).view({-1, -1}), ShapeError);
}

TEST_F(SymbolicMetaTest, ReshapeFlattenPermuteTransposeStrides) {
  Tensor x = fake({s0, s1, 4});
  Tensor f = x.flatten(0, 1);
  EXPECT_EQ(str(f.sym_sizes()), str(SymIntArrayRef{s0 * s1, SymInt(4)}));
  EXPECT_EQ(str(f.sym_strides()), "[4, 1]");
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(str(p.sym_sizes()), "[4, s0, s1]");
  EXPECT_EQ(str(p.sym_strides()), str(SymIntArrayRef{SymInt(1), s1 * 4, SymInt(4)}));
  EXPECT_FALSE(p.is_contiguous());
  Tensor t = x.transpose(0, 1);
  EXPECT_EQ(str(t.sym_sizes()), "[s1, s0, 4]");
  EXPECT_EQ(str(t.sym_strides()), str(SymIntArrayRef{SymInt(4), s1 * 4, SymInt(1)}));
  Tensor r = x.reshape({x.size(0), -1});
  EXPECT_EQ(str(r.sym_sizes()), str(SymIntArrayRef{s0, s1 * 4}));
  EXPECT_EQ(str(x.unflatten(2, {2, 2}).sym_sizes()), "[s0, s1, 2, 2]");
  EXPECT_TRUE(env.guards().empty());
  // A reshape of a non-contiguous tensor copies; the result is contiguous.
  Tensor rt = t.reshape({-1});
  EXPECT_EQ(str(rt.sym_sizes()), str(SymIntArrayRef{s0 * s1 * 4}));
  EXPECT_TRUE(rt.is_contiguous());
}

TEST_F(SymbolicMetaTest, CatAlongASymbolicDim) {
  Tensor a = fake({s0, 3});
  Tensor b = fake({s1, 3});
  EXPECT_EQ(str(cat({a, b}, 0).sym_sizes()), str(SymIntArrayRef{s0 + s1, SymInt(3)}));
  EXPECT_EQ(str(cat({a, a}, 1).sym_sizes()), "[s0, 6]");
  EXPECT_EQ(str(stack({a, a}, 0).sym_sizes()), "[2, s0, 3]");
  EXPECT_TRUE(env.guards().empty());
}

TEST_F(SymbolicMetaTest, NarrowWithASymbolicLength) {
  Tensor x = fake({s0, 4});
  Tensor n = x.narrow(0, 1, x.size(0) - 1);
  EXPECT_EQ(str(n.sym_sizes()), str(SymIntArrayRef{s0 - 1, SymInt(4)}));
  EXPECT_EQ(str(n.impl()->sym_offset()), "4");
  Tensor c = cat({fake({s0, 4}), fake({s1, 4})}, 0);
  EXPECT_EQ(str(c.narrow(0, 0, s0).sym_sizes()), "[s0, 4]");
  EXPECT_EQ(str(c.narrow(0, s0, s1).sym_sizes()), "[s1, 4]");
  EXPECT_EQ(str(c.narrow(0, s0, s1).impl()->sym_offset()), str(s0 * 4));
}

TEST_F(SymbolicMetaTest, SplitKeepsPiecesSymbolic) {
  Tensor c = cat({fake({s0, 4}), fake({s1, 4})}, 0);
  std::vector<Tensor> parts = c.split(std::vector<SymInt>{s0, s1}, 0);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(str(parts[0].sym_sizes()), "[s0, 4]");
  EXPECT_EQ(str(parts[1].sym_sizes()), "[s1, 4]");
  EXPECT_EQ(str(fake({4, s0}).repeat({2, 1, 3}).sym_sizes()), str(SymIntArrayRef{2, 4, s0 * 3}));
}

TEST_F(SymbolicMetaTest, ExpandAndSqueeze) {
  Tensor e = fake({1, 4}).expand({s0, 4});
  EXPECT_EQ(str(e.sym_sizes()), "[s0, 4]");
  EXPECT_EQ(str(e.sym_strides()), "[0, 1]");
  EXPECT_EQ(str(fake({s0, 1}).expand({-1, s1}).sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(fake({s0, 4}).expand_as(fake({s1, s0, 4})).sym_sizes()), "[s1, s0, 4]");
  Tensor x = fake({s0, 1, s1});
  EXPECT_EQ(str(x.squeeze(1).sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(x.squeeze().sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(x.squeeze(0).sym_sizes()), "[s0, 1, s1]");
  EXPECT_EQ(str(x.unsqueeze(0).sym_sizes()), "[1, s0, 1, s1]");
  EXPECT_TRUE(env.guards().empty());
  EXPECT_THROW(fake({s0, 4}).expand({s0, 5}), ShapeError);
}

TEST_F(SymbolicMetaTest, SoftmaxWhereUnaryAndCopies) {
  Tensor x = fake({s0, s1});
  EXPECT_EQ(str(x.softmax(1).sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(x.log_softmax(0).sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(x.cumsum(0).sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(x.exp().sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(x.clone().sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(x.to(kFloat64).sym_sizes()), "[s0, s1]");
  Tensor cond = fake({s0, 1}, kBool);
  EXPECT_EQ(str(where(cond, fake({1, s1}), fake({s1})).sym_sizes()), "[s0, s1]");
  EXPECT_EQ(str(zeros_like(x).sym_sizes()), "[s0, s1]");
  EXPECT_TRUE(env.guards().empty());
}

TEST_F(SymbolicMetaTest, ArangeOfASymbolicEnd) {
  Tensor r = arange(s0, TensorOptions(kInt64).device(Device::Meta));
  EXPECT_EQ(str(r.sym_sizes()), "[s0]");
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_EQ(str(arange(int64_t{2}, s0, TensorOptions(kInt64).device(Device::Meta)).sym_sizes()),
            str(SymIntArrayRef{s0 - 2}));
  EXPECT_EQ(str(sym_arange(0, s0, 2, TensorOptions(kInt64).device(Device::Meta)).sym_sizes()),
            str(SymIntArrayRef{(s0 + 1) / 2}));
}

TEST_F(SymbolicMetaTest, ConcreteSizesSpecializeWithAGuard) {
  Tensor x = fake({s0, 4});
  ASSERT_TRUE(env.guards().empty());
  // pad's meta still reads concrete sizes(): the output is concrete, and s0 == 8 is guarded.
  Tensor p = pad(x, {1, 1});
  EXPECT_FALSE(p.impl()->has_symbolic_metadata());
  EXPECT_EQ(p.sizes(), IntArrayRef({8, 6}));
  ASSERT_FALSE(env.guards().empty());
  EXPECT_NE(sym::to_string(env.guards().back().condition).find("s0"), std::string::npos);
  // Direct reads specialize the same way and see the hints.
  EXPECT_EQ(x.sizes(), IntArrayRef({8, 4}));
  EXPECT_EQ(x.strides(), IntArrayRef({4, 1}));
  EXPECT_EQ(x.numel(), 32);
  EXPECT_EQ(static_cast<int64_t>(x.size(0)), 8);
}

TEST_F(SymbolicMetaTest, IntListArgumentsSpecializeInPlace) {
  // An op reading int_list() sees concrete values, and the boxed argument becomes them.
  IValue v(SymIntArrayRef{s0, SymInt(3)});
  EXPECT_TRUE(v.sym_int_list()[0].is_symbolic());
  EXPECT_EQ(v.int_list(), IntArrayRef({8, 3}));
  EXPECT_FALSE(v.sym_int_list()[0].is_symbolic());
  EXPECT_FALSE(env.guards().empty());
  IValue i(s1);
  EXPECT_TRUE(i.to_sym_int().is_symbolic());
  EXPECT_EQ(i.to_int(), 6);
}

TEST_F(SymbolicMetaTest, FlattenModulesKeepTheBatchSymbolic) {
  nn::Flatten flatten;
  Tensor x = fake({s0, 3, 4});
  Tensor f = flatten.forward(x);
  EXPECT_EQ(str(f.sym_sizes()), "[s0, 12]");
  nn::Unflatten unflatten(1, {2, -1});
  EXPECT_EQ(str(unflatten.forward(f).sym_sizes()), "[s0, 2, 6]");
  EXPECT_TRUE(env.guards().empty());
}

TEST(SymbolicMetaEagerTest, SymbolicShapesNeedTheMetaDevice) {
  ShapeEnv env;
  ShapeEnv::Scope scope(&env);
  SymInt s = env.create_size_symbol(5, "x.size(0)");
  EXPECT_THROW(empty({s}), ValueError);
}

TEST(SymbolicMetaEagerTest, IntegerShapesPassWhereSymIntListsAreTaken) {
  std::vector<int64_t> shape{2, 3};
  DimVector dims{3, 2};
  Tensor x = zeros(shape);
  EXPECT_EQ(x.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(x.view(dims).sizes(), IntArrayRef({3, 2}));
  EXPECT_EQ(x.reshape(x.sizes()).sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(x.view({x.size(1), -1}).sizes(), IntArrayRef({3, 2}));
  EXPECT_EQ(x.narrow(1, 1, 2).sizes(), IntArrayRef({2, 2}));
  EXPECT_EQ(arange(x.size(1)).sizes(), IntArrayRef({3}));
  EXPECT_EQ(static_cast<int64_t>(x.size(0)), 2);
  EXPECT_FALSE(x.size(0).is_symbolic());
}

}  // namespace
}  // namespace kiln
