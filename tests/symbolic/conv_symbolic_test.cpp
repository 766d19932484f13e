// Symbolic shapes through the meta functions of conv3d, conv_transpose1d/2d/3d and
// conv_transpose_backward: sizes that are symbols of a ShapeEnv give output sizes that are
// expressions of them (evaluated here against the concrete Meta computation of the same op), and
// the batch size is never guarded.
#include <gtest/gtest.h>

#include <map>

#include "kiln/kiln.h"
#include "src/core/tensor_factory.h"
#include "src/ops/linalg_backward.h"
#include "src/sym/expr.h"
#include "src/sym/shape_env.h"

namespace kiln {
namespace {

std::string str(SymInt s) { return sym::to_string(s.expr()); }

Tensor meta(std::initializer_list<SymInt> sizes) {
  return empty_tensor(SymDimVector(sizes), kFloat32, Device::Meta);
}
Tensor concrete_meta(std::vector<int64_t> sizes) {
  return empty_tensor(IntArrayRef(sizes), kFloat32, Device::Meta);
}

bool guards_mention(const sym::ShapeEnv& env, SymInt symbol) {
  for (const sym::ShapeGuard& g : env.guards())
    for (sym::ExprPtr s : sym::free_symbols(g.condition))
      if (s == symbol.expr()) return true;
  return false;
}

int64_t eval(SymInt s, const std::map<std::string, int64_t>& values) {
  const std::optional<int64_t> v =
      sym::evaluate(s.expr(), [&](sym::ExprPtr symbol) -> std::optional<int64_t> {
        auto it = values.find(symbol->name());
        if (it == values.end()) return std::nullopt;
        return it->second;
      });
  EXPECT_TRUE(v.has_value()) << str(s);
  return v.value_or(-1);
}

class SymbolicConv : public ::testing::Test {
 protected:
  SymInt size(int64_t hint, std::string source) {
    return env.create_size_symbol(hint, std::move(source));
  }
  sym::ShapeEnv env;
  sym::ShapeEnv::Scope scope{&env};
};

using Ints = std::vector<int64_t>;

TEST_F(SymbolicConv, Conv3dOutputSizesAreExpressionsOfTheInputSizes) {
  const SymInt n = size(2, "x.size(0)"), d = size(9, "x.size(2)"), h = size(13, "x.size(3)");
  const Ints stride{2, 1, 3}, padding{1, 0, 2}, dilation{1, 2, 1};
  const Tensor y =
      conv3d(meta({n, 3, d, h, 10}), meta({4, 3, 3, 2, 4}), meta({4}), stride, padding, dilation);
  ASSERT_EQ(y.dim(), 5);
  EXPECT_EQ(str(y.sym_sizes()[0]), str(n));
  EXPECT_EQ(sym::free_symbols(y.sym_sizes()[2].expr()), std::vector<sym::ExprPtr>{d.expr()});
  EXPECT_FALSE(guards_mention(env, n));
  for (auto [dv, hv] : std::vector<std::pair<int64_t, int64_t>>{{9, 13}, {5, 7}, {20, 31}}) {
    const Tensor ref = conv3d(concrete_meta({2, 3, dv, hv, 10}), concrete_meta({4, 3, 3, 2, 4}),
                              concrete_meta({4}), stride, padding, dilation);
    const std::map<std::string, int64_t> values{{d.expr()->name(), dv}, {h.expr()->name(), hv}};
    for (int64_t i = 2; i < 5; ++i)
      EXPECT_EQ(eval(y.sym_sizes()[i], values), ref.sizes()[i]) << "dim " << i;
  }
}

TEST_F(SymbolicConv, TransposedOutputSizesAndGradientShapes) {
  const SymInt n = size(3, "x.size(0)"), h = size(6, "x.size(2)"), w = size(7, "x.size(3)");
  const Ints stride{2, 3}, padding{1, 0}, output_padding{1, 2}, dilation{1, 2};
  const Tensor x = meta({n, 4, h, w}), weight = meta({4, 3, 3, 2});
  const Tensor y =
      conv_transpose2d(x, weight, meta({6}), stride, padding, output_padding, 2, dilation);
  EXPECT_EQ(str(y.sym_sizes()[0]), str(n));
  EXPECT_EQ(str(y.sym_sizes()[1]), "6");
  EXPECT_FALSE(guards_mention(env, n));
  for (auto [hv, wv] : std::vector<std::pair<int64_t, int64_t>>{{6, 7}, {1, 2}, {15, 4}}) {
    const Tensor ref =
        conv_transpose2d(concrete_meta({3, 4, hv, wv}), concrete_meta({4, 3, 3, 2}),
                         concrete_meta({6}), stride, padding, output_padding, 2, dilation);
    const std::map<std::string, int64_t> values{{h.expr()->name(), hv}, {w.expr()->name(), wv}};
    EXPECT_EQ(eval(y.sym_sizes()[2], values), ref.sizes()[2]);
    EXPECT_EQ(eval(y.sym_sizes()[3], values), ref.sizes()[3]);
  }
  // The gradient's shapes are the input's and the weight's; a grad_output with the forward's
  // (symbolic) output shape fits structurally.
  auto [gi, gw, gb] = conv_transpose_backward(y, x, weight, stride, padding, output_padding, 2,
                                              dilation, {true, true, true});
  EXPECT_EQ(gi.sym_sizes().size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(str(gi.sym_sizes()[i]), str(x.sym_sizes()[i]));
  EXPECT_EQ(gw.sizes().vec(), (Ints{4, 3, 3, 2}));
  EXPECT_EQ(gb.sizes().vec(), (Ints{6}));
  // 1-d and 3-d, unbatched.
  const SymInt l = size(11, "z.size(1)");
  const Tensor z = conv_transpose1d(meta({2, l}), meta({2, 5, 4}), Tensor(), {3});
  EXPECT_EQ(eval(z.sym_sizes()[1], {{l.expr()->name(), 11}}), (11 - 1) * 3 + 3 + 1);
  const Tensor v = conv_transpose3d(meta({2, l, 3, 3}), meta({2, 1, 2, 2, 2}), Tensor(), {2});
  EXPECT_EQ(eval(v.sym_sizes()[1], {{l.expr()->name(), 5}}), 4 * 2 + 1 + 1);
}

}  // namespace
}  // namespace kiln
