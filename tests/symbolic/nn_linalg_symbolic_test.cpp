// Symbolic shapes through the meta functions and composites of the linalg, conv, pool, nn, index,
// sort and random families: Meta tensors whose sizes are symbols of a ShapeEnv, as the tracer
// makes them, must give outputs whose sizes are the right expressions (not specialized
// integers), and guards only where a check compares sizes.
//
// Expected expressions are checked two ways: simple ones as text, arithmetic ones by evaluating
// them for several values of the symbols against the concrete (eager) Meta computation of the
// same op, which is independent of the symbolic path.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "kiln/kiln.h"
#include "src/core/tensor_factory.h"
#include "src/ops/linalg_backward.h"
#include "src/ops/nn_backward.h"
#include "src/sym/expr.h"
#include "src/sym/shape_env.h"

namespace kiln {
namespace {

std::string str(SymInt s) { return sym::to_string(s.expr()); }

std::vector<std::string> strs(const Tensor& t) {
  std::vector<std::string> out;
  for (SymInt s : t.sym_sizes()) out.push_back(str(s));
  return out;
}

using Strs = std::vector<std::string>;

Tensor meta(std::initializer_list<SymInt> sizes, ScalarType dtype = kFloat32) {
  return empty_tensor(SymDimVector(sizes), dtype, Device::Meta);
}
Tensor concrete_meta(std::vector<int64_t> sizes, ScalarType dtype = kFloat32) {
  return empty_tensor(IntArrayRef(sizes), dtype, Device::Meta);
}

// Whether any recorded guard mentions `symbol` (a size that must stay fully dynamic).
bool guards_mention(const sym::ShapeEnv& env, SymInt symbol) {
  for (const sym::ShapeGuard& g : env.guards())
    for (sym::ExprPtr s : sym::free_symbols(g.condition))
      if (s == symbol.expr()) return true;
  return false;
}

// Evaluates `s` with symbol values given by name ("s0" -> 9).
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

class SymbolicNnLinalg : public ::testing::Test {
 protected:
  // A fresh input size symbol (hint `hint`); distinct hints give distinct symbols.
  SymInt size(int64_t hint, std::string source) {
    return env.create_size_symbol(hint, std::move(source));
  }
  sym::ShapeEnv env;
  sym::ShapeEnv::Scope scope{&env};
};

// ---- linalg ----

TEST_F(SymbolicNnLinalg, LinearWithSymbolicBatch) {
  const SymInt b = size(8, "x.size(0)");
  const Tensor x = meta({b, 784});
  const Tensor w = meta({512, 784});
  EXPECT_EQ(strs(linear(x, w)), (Strs{str(b), "512"}));
  EXPECT_EQ(strs(linear(x, w, meta({512}))), (Strs{str(b), "512"}));
  EXPECT_EQ(strs(mm(x, w.t())), (Strs{str(b), "512"}));
  EXPECT_EQ(strs(matmul(x, w.t())), (Strs{str(b), "512"}));
  EXPECT_EQ(strs(addmm(meta({512}), x, w.t())), (Strs{str(b), "512"}));
  // Every check here compares concrete sizes (784 == 784): nothing to guard.
  EXPECT_TRUE(env.guards().empty());
}

TEST_F(SymbolicNnLinalg, LinearOver3dInputKeepsLeadingDims) {
  const SymInt b = size(4, "x.size(0)"), t = size(10, "x.size(1)");
  const Tensor y = linear(meta({b, t, 32}), meta({16, 32}));
  EXPECT_EQ(strs(y), (Strs{str(b), str(t), "16"}));
}

TEST_F(SymbolicNnLinalg, MatmulBroadcastsSymbolicBatchDims) {
  const SymInt b = size(3, "a.size(0)"), n = size(5, "a.size(1)");
  // [b, n, 4] @ [4, 6]: folded into one mm.
  EXPECT_EQ(strs(matmul(meta({b, n, 4}), meta({4, 6}))), (Strs{str(b), str(n), "6"}));
  // [b, n, 4] @ [1, 4, 7]: broadcast batch, bmm.
  EXPECT_EQ(strs(matmul(meta({b, n, 4}), meta({1, 4, 7}))), (Strs{str(b), str(n), "7"}));
  // [n, 4] @ [b, 4, n]: batch from the right operand.
  EXPECT_EQ(strs(matmul(meta({n, 4}), meta({b, 4, n}))), (Strs{str(b), str(n), str(n)}));
  // bmm with the same batch symbol on both sides: structural equality, no guard.
  EXPECT_EQ(strs(bmm(meta({b, n, 4}), meta({b, 4, 2}))), (Strs{str(b), str(n), "2"}));
  EXPECT_TRUE(env.guards().empty());
}

TEST_F(SymbolicNnLinalg, InnerDimsOfTwoSymbolsAreGuardedEqual) {
  sym::ShapeEnv plain(sym::ShapeEnvOptions{.duck_shape = false});
  sym::ShapeEnv::Scope inner(&plain);
  const SymInt k1 = plain.create_size_symbol(5, "a.size(1)");
  const SymInt k2 = plain.create_size_symbol(5, "b.size(0)");
  ASSERT_FALSE(same(k1, k2));
  const Tensor out = matmul(meta({3, k1}), meta({k2, 4}));
  EXPECT_EQ(strs(out), (Strs{"3", "4"}));
  // The check k1 == k2 held for the hints and must hold again: a guard (or a replacement that
  // unifies the two symbols) was recorded.
  const bool unified = plain.simplify(k1.expr()) == plain.simplify(k2.expr());
  EXPECT_TRUE(!plain.guards().empty() || unified);
}

TEST_F(SymbolicNnLinalg, InnerDimMismatchStillRaisesShapeError) {
  const SymInt n = size(6, "a.size(1)");
  try {
    mm(meta({2, n}), meta({7, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be multiplied"), std::string::npos) << e.what();
  }
}

// ---- convolution and pooling ----

TEST_F(SymbolicNnLinalg, Conv2dOutputSizeIsFloorDivisionExpression) {
  const SymInt n = size(2, "x.size(0)"), h = size(17, "x.size(2)"), w = size(23, "x.size(3)");
  const Tensor weight = meta({8, 3, 3, 5});
  const std::vector<int64_t> stride{2, 3}, padding{1, 2}, dilation{1, 2};
  const Tensor y = conv2d(meta({n, 3, h, w}), weight, meta({8}), stride, padding, dilation);
  ASSERT_EQ(y.dim(), 4);
  EXPECT_EQ(str(y.sym_sizes()[0]), str(n));
  EXPECT_EQ(str(y.sym_sizes()[1]), "8");
  const SymInt oh = y.sym_sizes()[2], ow = y.sym_sizes()[3];
  ASSERT_TRUE(oh.is_symbolic());
  ASSERT_TRUE(ow.is_symbolic());
  EXPECT_EQ(sym::free_symbols(oh.expr()), std::vector<sym::ExprPtr>{h.expr()});
  EXPECT_EQ(sym::free_symbols(ow.expr()), std::vector<sym::ExprPtr>{w.expr()});
  // Only "the dilated kernel fits" may guard (on W here); the batch size stays unconstrained.
  EXPECT_FALSE(guards_mention(env, n));
  // The expressions agree with eager (concrete) shapes for sizes other than the hints.
  for (auto [hv, wv] : std::vector<std::pair<int64_t, int64_t>>{{17, 23}, {9, 12}, {30, 41}}) {
    const Tensor ref = conv2d(concrete_meta({2, 3, hv, wv}), concrete_meta({8, 3, 3, 5}),
                              concrete_meta({8}), stride, padding, dilation);
    EXPECT_EQ(eval(oh, {{h.expr()->name(), hv}}), ref.sizes()[2]) << str(oh) << " H=" << hv;
    EXPECT_EQ(eval(ow, {{w.expr()->name(), wv}}), ref.sizes()[3]) << str(ow) << " W=" << wv;
  }
}

TEST_F(SymbolicNnLinalg, Conv1dAndSamePaddingStaySymbolic) {
  const SymInt n = size(4, "x.size(0)"), l = size(50, "x.size(2)");
  EXPECT_EQ(strs(conv1d(meta({n, 2, l}), meta({6, 2, 3}), Tensor(), std::vector<int64_t>{1},
                        ConvPadding::Same)),
            (Strs{str(n), "6", str(l)}));
  const Tensor y = conv1d(meta({n, 2, l}), meta({6, 2, 4}), Tensor(), std::vector<int64_t>{3});
  for (int64_t lv : {50, 11, 64}) {
    const Tensor ref = conv1d(concrete_meta({4, 2, lv}), concrete_meta({6, 2, 4}), Tensor(),
                              std::vector<int64_t>{3});
    EXPECT_EQ(eval(y.sym_sizes()[2], {{l.expr()->name(), lv}}), ref.sizes()[2]);
  }
}

TEST_F(SymbolicNnLinalg, ConvolutionBackwardShapesFollowInputAndWeight) {
  const SymInt n = size(2, "x.size(0)"), h = size(12, "x.size(2)");
  const Tensor x = meta({n, 3, h, h});
  const Tensor w = meta({4, 3, 3, 3});
  const Tensor y = conv2d(x, w, Tensor(), std::vector<int64_t>{2}, std::vector<int64_t>{1});
  auto [gi, gw, gb] =
      convolution_backward(meta({y.sym_sizes()[0], 4, y.sym_sizes()[2], y.sym_sizes()[3]}), x, w,
                           std::vector<int64_t>{2}, std::vector<int64_t>{1},
                           std::vector<int64_t>{1}, 1, {true, true, true});
  EXPECT_EQ(strs(gi), strs(x));
  EXPECT_EQ(strs(gw), (Strs{"4", "3", "3", "3"}));
  EXPECT_EQ(strs(gb), (Strs{"4"}));
}

TEST_F(SymbolicNnLinalg, PoolingOutputSizes) {
  const SymInt n = size(2, "x.size(0)"), h = size(15, "x.size(2)"), w = size(20, "x.size(3)");
  const Tensor x = meta({n, 3, h, w});
  const Tensor mp =
      max_pool2d(x, std::vector<int64_t>{3}, std::vector<int64_t>{2}, std::vector<int64_t>{1});
  const Tensor ap = avg_pool2d(x, std::vector<int64_t>{2, 3});
  const Tensor aap = adaptive_avg_pool2d(x, std::vector<int64_t>{5, 7});
  EXPECT_EQ(str(mp.sym_sizes()[0]), str(n));
  EXPECT_EQ(str(ap.sym_sizes()[0]), str(n));
  EXPECT_EQ(strs(aap), (Strs{str(n), "3", "5", "7"}));
  ASSERT_TRUE(mp.sym_sizes()[2].is_symbolic());
  ASSERT_TRUE(ap.sym_sizes()[3].is_symbolic());
  EXPECT_FALSE(guards_mention(env, n));
  for (auto [hv, wv] : std::vector<std::pair<int64_t, int64_t>>{{15, 20}, {8, 9}, {33, 64}}) {
    const std::map<std::string, int64_t> values{{h.expr()->name(), hv}, {w.expr()->name(), wv}};
    const Tensor cx = concrete_meta({2, 3, hv, wv});
    const Tensor rmp =
        max_pool2d(cx, std::vector<int64_t>{3}, std::vector<int64_t>{2}, std::vector<int64_t>{1});
    const Tensor rap = avg_pool2d(cx, std::vector<int64_t>{2, 3});
    for (int d = 2; d < 4; ++d) {
      EXPECT_EQ(eval(mp.sym_sizes()[d], values), rmp.sizes()[d]) << str(mp.sym_sizes()[d]);
      EXPECT_EQ(eval(ap.sym_sizes()[d], values), rap.sizes()[d]) << str(ap.sym_sizes()[d]);
    }
  }
}

// ---- normalization ----

TEST_F(SymbolicNnLinalg, NormalizationOutputsAndSavedStats) {
  const SymInt b = size(6, "x.size(0)"), t = size(9, "x.size(1)");
  auto [ln, ln_mean, ln_rstd] =
      native_layer_norm(meta({b, t, 16}), std::vector<int64_t>{16}, meta({16}), meta({16}), 1e-5);
  EXPECT_EQ(strs(ln), (Strs{str(b), str(t), "16"}));
  EXPECT_EQ(strs(ln_mean), (Strs{str(b), str(t), "1"}));
  EXPECT_EQ(strs(ln_rstd), (Strs{str(b), str(t), "1"}));

  const SymInt h = size(10, "x.size(2)");
  const Tensor x = meta({b, 4, h, h});
  auto [bn, bn_mean, bn_invstd] =
      native_batch_norm(x, meta({4}), meta({4}), meta({4}), meta({4}), true, 0.1, 1e-5);
  EXPECT_EQ(strs(bn), strs(x));
  EXPECT_EQ(strs(bn_mean), (Strs{"4"}));
  EXPECT_EQ(strs(bn_invstd), (Strs{"4"}));
  EXPECT_EQ(strs(batch_norm(x, meta({4}), meta({4}))), strs(x));

  auto [gn, gn_mean, gn_rstd] = native_group_norm(x, meta({4}), meta({4}), 2, 1e-5);
  EXPECT_EQ(strs(gn), strs(x));
  EXPECT_EQ(strs(gn_mean), (Strs{str(b), "2"}));
  EXPECT_EQ(strs(group_norm(x, 2)), strs(x));
}

TEST_F(SymbolicNnLinalg, NormBackwardShapes) {
  const SymInt b = size(6, "x.size(0)");
  const Tensor x = meta({b, 8});
  auto [gi, gw, gb] =
      native_layer_norm_backward(meta({b, 8}), x, std::vector<int64_t>{8}, meta({b, 1}),
                                 meta({b, 1}), meta({8}), {true, true, true});
  EXPECT_EQ(strs(gi), (Strs{str(b), "8"}));
  EXPECT_EQ(strs(gw), (Strs{"8"}));
  EXPECT_EQ(strs(gb), (Strs{"8"}));
}

// ---- losses ----

TEST_F(SymbolicNnLinalg, LossShapesForEachReduction) {
  const SymInt b = size(32, "logits.size(0)");
  const Tensor logits = meta({b, 10});
  const Tensor target = meta({b}, kInt64);
  EXPECT_EQ(strs(cross_entropy(logits, target, Tensor(), "none")), (Strs{str(b)}));
  EXPECT_EQ(cross_entropy(logits, target).dim(), 0);
  EXPECT_EQ(strs(nll_loss(logits, target, Tensor(), "none")), (Strs{str(b)}));
  EXPECT_EQ(nll_loss(logits, target, Tensor(), "mean").dim(), 0);
  // Spatial targets: (N, C, d) -> (N, d).
  const SymInt d = size(7, "logits.size(2)");
  EXPECT_EQ(strs(cross_entropy(meta({b, 10, d}), meta({b, d}, kInt64), Tensor(), "none")),
            (Strs{str(b), str(d)}));
  EXPECT_EQ(strs(mse_loss(meta({b, 3}), meta({b, 3}), "none")), (Strs{str(b), "3"}));
  EXPECT_EQ(strs(cross_entropy_backward(meta({}), logits, target, Tensor(), "mean", -100, 0.0)),
            (Strs{str(b), "10"}));
  EXPECT_TRUE(env.guards().empty());
}

// ---- embedding, attention ----

TEST_F(SymbolicNnLinalg, EmbeddingOfSymbolicIndices) {
  const SymInt b = size(4, "ids.size(0)"), t = size(12, "ids.size(1)");
  EXPECT_EQ(strs(embedding(meta({100, 16}), meta({b, t}, kInt64))), (Strs{str(b), str(t), "16"}));
}

TEST_F(SymbolicNnLinalg, ScaledDotProductAttentionShapes) {
  const SymInt b = size(2, "q.size(0)"), l = size(7, "q.size(2)"), s = size(9, "k.size(2)");
  const Tensor q = meta({b, 4, l, 8}), k = meta({b, 4, s, 8}), v = meta({b, 4, s, 5});
  EXPECT_EQ(strs(scaled_dot_product_attention(q, k, v)), (Strs{str(b), "4", str(l), "5"}));
  const Tensor mask = meta({l, s}, kBool);
  EXPECT_EQ(strs(scaled_dot_product_attention(q, k, v, mask)), (Strs{str(b), "4", str(l), "5"}));
}

// ---- index ----

TEST_F(SymbolicNnLinalg, IndexSelectAndGatherWithSymbolicIndexLength) {
  const SymInt n = size(5, "idx.size(0)");
  const Tensor self = meta({10, 3});
  EXPECT_EQ(strs(self.index_select(0, meta({n}, kInt64))), (Strs{str(n), "3"}));
  const SymInt m = size(4, "self.size(0)");
  EXPECT_EQ(strs(meta({m, 6}).gather(1, meta({m, 2}, kInt64))), (Strs{str(m), "2"}));
  EXPECT_EQ(strs(meta({m, 6}).scatter(1, meta({m, 2}, kInt64), 1.0)), (Strs{str(m), "6"}));
  EXPECT_EQ(strs(index(meta({m, 6}), {Tensor(), meta({n}, kInt64)})), (Strs{str(m), str(n)}));
}

TEST_F(SymbolicNnLinalg, NonzeroGivesAnUnbackedSymbol) {
  const SymInt n = size(6, "x.size(0)");
  const Tensor nz = meta({n, 3}).nonzero();
  ASSERT_EQ(nz.dim(), 2);
  EXPECT_EQ(nz.dtype(), kInt64);
  const SymInt rows = nz.sym_sizes()[0];
  ASSERT_TRUE(rows.is_symbolic());
  const sym::SymbolInfo* info = env.info(rows.expr());
  ASSERT_NE(info, nullptr);
  EXPECT_TRUE(info->unbacked);
  EXPECT_FALSE(info->hint.has_value());
  EXPECT_EQ(str(nz.sym_sizes()[1]), "2");
}

TEST_F(SymbolicNnLinalg, BoolMaskIndexGivesAnUnbackedSymbol) {
  const Tensor r = index(meta({5, 3}), {meta({5}, kBool)});
  ASSERT_EQ(r.dim(), 2);
  const SymInt rows = r.sym_sizes()[0];
  ASSERT_TRUE(rows.is_symbolic());
  EXPECT_TRUE(env.info(rows.expr())->unbacked);
  EXPECT_EQ(str(r.sym_sizes()[1]), "3");
}

TEST_F(SymbolicNnLinalg, OneHotInferringClassesGivesAnUnbackedSymbol) {
  const SymInt n = size(6, "labels.size(0)");
  const Tensor r = one_hot(meta({n}, kInt64));
  ASSERT_EQ(r.dim(), 2);
  EXPECT_EQ(str(r.sym_sizes()[0]), str(n));
  EXPECT_TRUE(env.info(r.sym_sizes()[1].expr())->unbacked);
  EXPECT_EQ(strs(one_hot(meta({n}, kInt64), 10)), (Strs{str(n), "10"}));
}

TEST(SymbolicNnLinalgNoEnv, NonzeroOnMetaWithoutShapeEnvStillRaises) {
  EXPECT_THROW(concrete_meta({3}).nonzero(), NotImplementedError);
}

// ---- sort, random ----

TEST_F(SymbolicNnLinalg, SortTopkDropoutKeepSymbolicSizes) {
  const SymInt n = size(9, "x.size(0)");
  const Tensor x = meta({n, 5});
  EXPECT_EQ(strs(x.sort(0).first), (Strs{str(n), "5"}));
  EXPECT_EQ(strs(x.topk(2, 1).second), (Strs{str(n), "2"}));
}

}  // namespace
}  // namespace kiln
