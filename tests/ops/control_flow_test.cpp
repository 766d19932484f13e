// Eager higher-order ops (include/kiln/control_flow.h): each equals the C++ control flow it names,
// gradients equal the unrolled program's, and a body that breaks the contract raises.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/control_flow.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
  if (a.numel() == 0) return 0;
  return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Cond, RunsTheBranchThePredicatePicks) {
  Tensor x = arange(6, kFloat32).reshape({2, 3});
  BodyFn plus = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + 1}; };
  BodyFn times = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 10}; };
  EXPECT_EQ(max_abs_diff(cond(true, plus, times, {x})[0], x + 1), 0);
  EXPECT_EQ(max_abs_diff(cond(false, plus, times, {x})[0], x * 10), 0);
  EXPECT_EQ(max_abs_diff(cond(x.sum() > 100, plus, times, {x})[0], x * 10), 0);
  EXPECT_EQ(max_abs_diff(cond(x.sum() > 1, plus, times, {x})[0], x + 1), 0);
}

TEST(Cond, ASymBoolPredicateOnPlainSizesIsABool) {
  const Tensor x = ones({3, 2});
  auto sum = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].sum()}; };
  auto neg = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].neg()}; };
  EXPECT_EQ(cond(x.size(0) > 2, sum, neg, {x})[0].item<float>(), 6.0f);
  EXPECT_EQ(cond(x.size(1) > 2, sum, neg, {x})[0].dim(), 2);
}

TEST(Cond, APredicateTensorIsOneBool) {
  Tensor x = ones({3});
  BodyFn id = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2}; };
  EXPECT_THROW(cond(x > 0, id, id, {x}), ValueError);               // three elements
  std::string msg = error_of([&] { cond(x.sum(), id, id, {x}); });  // float, not bool
  EXPECT_NE(msg.find("cond: pred must be a bool tensor with one element"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  EXPECT_THROW(cond(Tensor(), id, id, {x}), ValueError);
}

TEST(Cond, ABranchThatMutatesOrAliasesItsOperandRaises) {
  Tensor x = zeros({3});
  BodyFn mutate = [](const std::vector<Tensor>& v) {
    v[0].add_(1);
    return std::vector<Tensor>{v[0] * 1};
  };
  BodyFn alias = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].view({3})}; };
  BodyFn empty = [](const std::vector<Tensor>&) { return std::vector<Tensor>{Tensor()}; };
  BodyFn ok = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + 1}; };
  std::string msg = error_of([&] { cond(true, mutate, ok, {x}); });
  EXPECT_NE(msg.find("true_fn mutated its operand 0"), std::string::npos) << msg;
  msg = error_of([&] { cond(false, ok, alias, {x}); });
  EXPECT_NE(msg.find("false_fn returned output 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("aliases its operand 0"), std::string::npos) << msg;
  EXPECT_THROW(cond(true, empty, ok, {x}), ValueError);
}

TEST(Cond, GradientsFlowThroughTheTakenBranch) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  BodyFn square = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * v[0]}; };
  BodyFn triple = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 3}; };
  Tensor g = grad({cond(x.sum() > 0, square, triple, {x})[0].sum()}, {x})[0];
  EXPECT_EQ(max_abs_diff(g, x.detach() * 2), 0);
  g = grad({cond(x.sum() < 0, square, triple, {x})[0].sum()}, {x})[0];
  EXPECT_EQ(max_abs_diff(g, full({3}, 3.0, kFloat64)), 0);
}

TEST(WhileLoop, RunsTheBodyWhileTheConditionHolds) {
  LoopConditionFn below_ten = [](const std::vector<Tensor>& c) { return c[0] < 10; };
  BodyFn step = [](const std::vector<Tensor>& c) {
    return std::vector<Tensor>{c[0] + 1, c[1] * 2};
  };
  std::vector<Tensor> out = while_loop(below_ten, step, {tensor({3}, kInt64), ones({2})});
  EXPECT_EQ(out[0].item<int64_t>(), 10);
  EXPECT_EQ(max_abs_diff(out[1], full({2}, 128.0)), 0);  // 7 doublings
}

TEST(WhileLoop, WithNoIterationReturnsTheCarriesThemselves) {
  Tensor i = tensor({10}, kInt64), x = ones({2});
  std::vector<Tensor> out = while_loop([](const std::vector<Tensor>& c) { return c[0] < 10; },
                                       [](const std::vector<Tensor>& c) {
                                         return std::vector<Tensor>{c[0] + 1, c[1] * 2};
                                       },
                                       {i, x});
  EXPECT_TRUE(out[0].is_same(i));
  EXPECT_TRUE(out[1].is_same(x));
}

TEST(WhileLoop, ACarryKeepsItsMetadata) {
  LoopConditionFn below_three = [](const std::vector<Tensor>& c) { return c[0] < 3; };
  Tensor i = tensor({0}, kInt64), x = ones({2});
  std::string msg = error_of([&] {
    while_loop(below_three,
               [](const std::vector<Tensor>& c) {
                 return std::vector<Tensor>{c[0] + 1, c[1].to(kFloat64)};
               },
               {i, x});
  });
  EXPECT_NE(msg.find("body_fn returned carry 1 as float64 [2] but received it as float32 [2]"),
            std::string::npos)
      << msg;
  EXPECT_THROW(while_loop(below_three,
                          [](const std::vector<Tensor>& c) {
                            return std::vector<Tensor>{c[0] + 1, cat({c[1], c[1]})};
                          },
                          {i, x}),
               ShapeError);
  EXPECT_THROW(
      while_loop(below_three,
                 [](const std::vector<Tensor>& c) { return std::vector<Tensor>{c[0] + 1}; },
                 {i, x}),
      ValueError);
  EXPECT_THROW(while_loop([](const std::vector<Tensor>& c) { return c[1]; },  // not a bool
                          [](const std::vector<Tensor>& c) {
                            return std::vector<Tensor>{c[0] + 1, c[1] * 1};
                          },
                          {i, x}),
               ValueError);
  EXPECT_THROW(while_loop(below_three,
                          [](const std::vector<Tensor>& c) {
                            c[1].mul_(2);
                            return std::vector<Tensor>{c[0] + 1, c[1] * 1};
                          },
                          {i, x}),
               ValueError);
}

TEST(WhileLoop, GradientsEqualTheUnrolledLoop) {
  Tensor w = tensor({0.5, -1.5}, kFloat64).requires_grad_();
  Tensor x0 = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  std::vector<Tensor> out =
      while_loop([](const std::vector<Tensor>& c) { return c[0] < 4; },
                 [&](const std::vector<Tensor>& c) {
                   return std::vector<Tensor>{c[0] + 1, (c[1] * w).sin() + c[1]};
                 },
                 {tensor({0}, kInt64), x0});
  std::vector<Tensor> g = grad({out[1].sum()}, {w, x0});
  Tensor y = x0;
  for (int k = 0; k < 4; ++k) y = (y * w).sin() + y;
  std::vector<Tensor> expected = grad({y.sum()}, {w, x0});
  EXPECT_LT(max_abs_diff(g[0], expected[0]), 1e-12);
  EXPECT_LT(max_abs_diff(g[1], expected[1]), 1e-12);
}

TEST(Map, AppliesTheBodyToEachLeadingSliceAndStacks) {
  Tensor xs = arange(12, kFloat32).reshape({4, 3});
  Tensor ys = arange(4, kFloat32);
  Tensor bias = full({3}, 0.5);
  std::vector<Tensor> out = map(
      [](const std::vector<Tensor>& x, const std::vector<Tensor>& args) {
        return std::vector<Tensor>{x[0] * x[1] + args[0], x[0].sum()};
      },
      {xs, ys}, {bias});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(max_abs_diff(out[0], xs * ys.unsqueeze(1) + bias), 0);
  EXPECT_EQ(max_abs_diff(out[1], xs.sum({1})), 0);
}

TEST(Map, RejectsMismatchedOrEmptyLeadingDimsAndDifferentSliceShapes) {
  MapFn twice = [](const std::vector<Tensor>& x, const std::vector<Tensor>&) {
    return std::vector<Tensor>{x[0] * 2};
  };
  EXPECT_THROW(map(twice, {ones({3, 2}), ones({4, 2})}), ShapeError);
  EXPECT_THROW(map(twice, {ones({0, 2})}), ShapeError);
  EXPECT_THROW(map(twice, {ones({})}), ShapeError);
  MapFn ragged = [](const std::vector<Tensor>& x, const std::vector<Tensor>&) {
    return std::vector<Tensor>{x[0].narrow(0, 0, x[0][0].item<int64_t>() + 1).clone()};
  };
  std::string msg = error_of([&] {
    map(ragged, {tensor({0, 1, 1, 1, 0, 0}, kInt64).reshape({2, 3})});
  });
  EXPECT_NE(msg.find("map: fn returned output 0 as int64 [2] for slice 1 but as int64 [1] for "
                     "slice 0"),
            std::string::npos)
      << msg;
  EXPECT_THROW(map([](const std::vector<Tensor>& x,
                      const std::vector<Tensor>&) { return std::vector<Tensor>{x[0]}; },
                   {ones({2, 2})}),
               ValueError);  // an alias of the mapped input
}

TEST(Scan, EqualsTheSequentialLoopForwardAndReversed) {
  Tensor xs = arange(1, 13, 1, kFloat64).reshape({3, 4});
  ScanFn running_sum = [](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
    Tensor next = c[0] + x[0];
    return std::make_pair(std::vector<Tensor>{next}, std::vector<Tensor>{next * 1, x[0] * 2});
  };
  ScanResult r = scan(running_sum, {zeros({4}, kFloat64)}, {xs});
  EXPECT_EQ(max_abs_diff(r.carry[0], xs.sum({0})), 0);
  EXPECT_EQ(max_abs_diff(r.ys[0], xs.cumsum(0)), 0);
  EXPECT_EQ(max_abs_diff(r.ys[1], xs * 2), 0);
  // Along dim 1, from the end: ys keep xs' order.
  ScanResult back = scan(running_sum, {zeros({3}, kFloat64)}, {xs}, 1, true);
  EXPECT_EQ(max_abs_diff(back.ys[0], xs.flip({1}).cumsum(1).flip({1})), 0);
  EXPECT_EQ(max_abs_diff(back.carry[0], xs.sum({1})), 0);
}

TEST(Scan, ACarryKeepsItsMetadataAndStepsHaveOneShape) {
  ScanFn widen = [](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
    return std::make_pair(std::vector<Tensor>{(c[0] + x[0]).to(kFloat64)},
                          std::vector<Tensor>{x[0] * 1});
  };
  std::string msg = error_of([&] { scan(widen, {zeros({2})}, {ones({3, 2})}); });
  EXPECT_NE(msg.find("scan: combine_fn returned carry 0 as float64 [2] but received it as "
                     "float32 [2]"),
            std::string::npos)
      << msg;
  EXPECT_THROW(scan(widen, {zeros({2})}, {ones({0, 2})}), ShapeError);
  EXPECT_THROW(scan(widen, {zeros({2})}, {ones({3, 2}), ones({4, 2})}), ShapeError);
  ScanFn keep = [](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
    return std::make_pair(std::vector<Tensor>{c[0]}, std::vector<Tensor>{x[0] * 1});
  };
  EXPECT_THROW(scan(keep, {zeros({2})}, {ones({3, 2})}), ValueError);  // returns its carry
}

TEST(Scan, GradientsEqualTheUnrolledRecurrence) {
  Tensor w = tensor({0.3, -0.7, 1.1}, kFloat64).requires_grad_();
  Tensor h0 = tensor({0.1, 0.2, 0.3}, kFloat64).requires_grad_();
  Tensor xs = arange(15, kFloat64).reshape({5, 3}).mul(0.1).requires_grad_();
  ScanFn cell = [&](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
    Tensor h = (c[0] * w + x[0]).tanh();
    return std::make_pair(std::vector<Tensor>{h}, std::vector<Tensor>{h * h});
  };
  ScanResult r = scan(cell, {h0}, {xs});
  Tensor loss = r.carry[0].sum() + r.ys[0].sum();
  std::vector<Tensor> g = grad({loss}, {w, h0, xs});
  Tensor h = h0, expected_loss = zeros({}, kFloat64);
  for (int64_t i = 0; i < 5; ++i) {
    h = (h * w + xs.select(0, i)).tanh();
    expected_loss = expected_loss + (h * h).sum();
  }
  expected_loss = expected_loss + h.sum();
  std::vector<Tensor> expected = grad({expected_loss}, {w, h0, xs});
  for (size_t k = 0; k < 3; ++k) EXPECT_LT(max_abs_diff(g[k], expected[k]), 1e-12) << k;
}

// The composition of affine maps z -> a z + b: associative, not commutative.
std::vector<Tensor> compose_affine(const std::vector<Tensor>& first,
                                   const std::vector<Tensor>& second) {
  return {first[0] * second[0], first[1] * second[0] + second[1]};
}

// Note [The dispatch keys of a higher-order op]: on Meta tensors there is no data to pick a branch
// or count iterations with, so the ops give the result's metadata from the bodies' metadata.
TEST(HigherOrderOnMeta, CondRunsBothBranchesAndTheyMustAgree) {
  const Tensor x = empty({4, 3}, kMeta), pred = empty({}, TensorOptions(kBool).device(kMeta));
  int calls = 0;
  BodyFn sum_rows = [&](const std::vector<Tensor>& v) {
    ++calls;
    return std::vector<Tensor>{v[0].sum({1}), v[0].to(kInt64)};
  };
  BodyFn max_rows = [&](const std::vector<Tensor>& v) {
    ++calls;
    return std::vector<Tensor>{v[0].amax({1}), v[0].to(kInt64) + 1};
  };
  std::vector<Tensor> out = cond(pred, sum_rows, max_rows, {x});
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].is_meta());
  EXPECT_EQ(out[0].sizes().vec(), (std::vector<int64_t>{4}));
  EXPECT_EQ(out[1].dtype(), kInt64);
  BodyFn other_size = [](const std::vector<Tensor>& v) {
    return std::vector<Tensor>{v[0].sum(), v[0] * 1};
  };
  std::string msg = error_of([&] { cond(pred, sum_rows, other_size, {x}); });
  EXPECT_NE(msg.find("output 0 is float32 [4] from true_fn and float32 [] from false_fn"),
            std::string::npos)
      << msg;
  BodyFn one_output = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2}; };
  EXPECT_THROW(cond(pred, sum_rows, one_output, {x}), ValueError);
  // A predicate with data still picks one branch, whatever the operands' device.
  calls = 0;
  EXPECT_EQ(cond(ones({1}, kBool), sum_rows, max_rows, {x})[0].sizes().vec(),
            (std::vector<int64_t>{4}));
  EXPECT_EQ(calls, 1);
}

TEST(HigherOrderOnMeta, WhileLoopChecksOneIterationAndKeepsTheCarriesMetadata) {
  const Tensor i = empty({}, TensorOptions(kInt64).device(kMeta)), h = empty({2, 8}, kMeta);
  int bodies = 0;
  LoopConditionFn below = [](const std::vector<Tensor>& c) { return c[0] < 5; };
  BodyFn step = [&](const std::vector<Tensor>& c) {
    ++bodies;
    return std::vector<Tensor>{c[0] + 1, c[1].tanh()};
  };
  std::vector<Tensor> out = while_loop(below, step, {i, h});
  EXPECT_EQ(bodies, 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[1].is_meta());
  EXPECT_FALSE(out[1].is_same(h));
  EXPECT_EQ(out[1].sizes().vec(), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(out[0].dtype(), kInt64);
  // The contract is still checked: a carry that changes shape, a non-bool condition.
  BodyFn grows = [](const std::vector<Tensor>& c) {
    return std::vector<Tensor>{c[0] + 1, cat({c[1], c[1]}, 0)};
  };
  EXPECT_THROW(while_loop(below, grows, {i, h}), ShapeError);
  LoopConditionFn not_bool = [](const std::vector<Tensor>& c) { return c[0] + 1; };
  EXPECT_THROW(while_loop(not_bool, step, {i, h}), ValueError);
}

TEST(HigherOrderOnMeta, ScanAndMapRunOneStepAndStackItsMetadata) {
  const Tensor xs = empty({1000, 3, 5}, kMeta);
  int steps = 0;
  ScanFn accumulate = [&](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
    ++steps;
    Tensor next = c[0] + x[0].sum({0});
    return std::make_pair(std::vector<Tensor>{next},
                          std::vector<Tensor>{next.to(kFloat64), x[0] * 1});
  };
  ScanResult r = scan(accumulate, {empty({5}, kMeta)}, {xs});
  EXPECT_EQ(steps, 1);
  EXPECT_EQ(r.carry[0].sizes().vec(), (std::vector<int64_t>{5}));
  EXPECT_EQ(r.ys[0].sizes().vec(), (std::vector<int64_t>{1000, 5}));
  EXPECT_EQ(r.ys[0].dtype(), kFloat64);
  EXPECT_EQ(r.ys[1].sizes().vec(), (std::vector<int64_t>{1000, 3, 5}));
  // Along dim 1 (steps over the 3), reversed: ys stack along dim 1.
  ScanFn rows = [](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
    return std::make_pair(std::vector<Tensor>{c[0] + x[0]}, std::vector<Tensor>{x[0] * 2});
  };
  ScanResult by_dim = scan(rows, {empty({1000, 5}, kMeta)}, {xs}, 1, true);
  EXPECT_EQ(by_dim.ys[0].sizes().vec(), (std::vector<int64_t>{1000, 3, 5}));
  // The same metadata an eager scan over real data gives.
  ScanResult real = scan(rows, {zeros({4, 5})}, {zeros({4, 3, 5})}, 1, true);
  EXPECT_EQ(real.ys[0].sizes().vec(), (std::vector<int64_t>{4, 3, 5}));
  std::vector<Tensor> mapped =
      map([](const std::vector<Tensor>& x,
             const std::vector<Tensor>&) { return std::vector<Tensor>{x[0].t() * 2}; },
          {xs});
  EXPECT_EQ(mapped[0].sizes().vec(), (std::vector<int64_t>{1000, 5, 3}));
  EXPECT_TRUE(mapped[0].is_meta());
  ScanFn carry_changes = [](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
    return std::make_pair(std::vector<Tensor>{c[0].sum()}, std::vector<Tensor>{x[0] * 1});
  };
  EXPECT_THROW(scan(carry_changes, {empty({5}, kMeta)}, {xs}), ShapeError);
}

TEST(AssociativeScan, AddEqualsCumsumForEveryLength) {
  AssociativeFn add = [](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    return std::vector<Tensor>{a[0] + b[0]};
  };
  for (int64_t n = 1; n <= 17; ++n) {
    Tensor x = arange(n * 3, kInt64).reshape({n, 3});
    EXPECT_EQ(max_abs_diff(associative_scan(add, {x}, 0)[0], x.cumsum(0)), 0) << n;
    Tensor t = x.t();
    EXPECT_EQ(max_abs_diff(associative_scan(add, {t}, 1)[0], t.cumsum(1)), 0) << n;
    EXPECT_EQ(
        max_abs_diff(associative_scan(add, {t}, -1, true)[0], t.flip({1}).cumsum(1).flip({1})), 0)
        << n;
  }
}

TEST(AssociativeScan, KeepsTheOrderOfANonCommutativeCombine) {
  for (int64_t n = 1; n <= 13; ++n) {
    Tensor a = arange(n, kFloat64).mul(0.37).sin().add(1.1);
    Tensor b = arange(n, kFloat64).mul(1.3).cos();
    std::vector<Tensor> got = associative_scan(compose_affine, {a, b});
    std::vector<Tensor> got_back = associative_scan(compose_affine, {a, b}, 0, true);
    std::vector<Tensor> seq{a.select(0, 0).unsqueeze(0), b.select(0, 0).unsqueeze(0)};
    std::vector<Tensor> acc = seq;
    std::vector<std::vector<Tensor>> forward{acc};
    for (int64_t i = 1; i < n; ++i) {
      acc = compose_affine(acc, {a.narrow(0, i, 1), b.narrow(0, i, 1)});
      forward.push_back(acc);
    }
    acc = {a.narrow(0, n - 1, 1), b.narrow(0, n - 1, 1)};
    std::vector<std::vector<Tensor>> backward{acc};
    for (int64_t i = n - 2; i >= 0; --i) {
      acc = compose_affine(acc, {a.narrow(0, i, 1), b.narrow(0, i, 1)});
      backward.insert(backward.begin(), acc);
    }
    for (size_t k = 0; k < 2; ++k) {
      std::vector<Tensor> column, column_back;
      for (int64_t i = 0; i < n; ++i) {
        column.push_back(forward[static_cast<size_t>(i)][k]);
        column_back.push_back(backward[static_cast<size_t>(i)][k]);
      }
      EXPECT_LT(max_abs_diff(got[k], cat(column)), 1e-12) << n << " " << k;
      EXPECT_LT(max_abs_diff(got_back[k], cat(column_back)), 1e-12) << n << " " << k;
    }
  }
}

TEST(AssociativeScan, CallsTheCombineALogarithmicNumberOfTimes) {
  int calls = 0;
  AssociativeFn add = [&](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    ++calls;
    return std::vector<Tensor>{a[0] + b[0]};
  };
  Tensor x = ones({1024});
  EXPECT_EQ(max_abs_diff(associative_scan(add, {x})[0], arange(1, 1025, 1, kFloat32)), 0);
  EXPECT_LE(calls, 2 * 10);  // two per level, log2(1024) levels
}

TEST(AssociativeScan, RejectsMismatchedShapesAndCombinesThatChangeThem) {
  AssociativeFn add = [](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    return std::vector<Tensor>{a[0] + b[0], a[1] + b[1]};
  };
  EXPECT_THROW(associative_scan(add, {ones({4}), ones({5})}), ShapeError);
  EXPECT_THROW(associative_scan(add, {ones({})}), ShapeError);
  AssociativeFn summed = [](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    return std::vector<Tensor>{(a[0] + b[0]).sum({0}, true)};
  };
  EXPECT_THROW(associative_scan(summed, {ones({4})}), ShapeError);
}

TEST(AssociativeScan, GradientsEqualCumsum) {
  Tensor x = arange(7, kFloat64).mul(0.5).requires_grad_();
  Tensor weights = arange(7, kFloat64).cos();
  AssociativeFn add = [](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    return std::vector<Tensor>{a[0] + b[0]};
  };
  Tensor g = grad({(associative_scan(add, {x})[0] * weights).sum()}, {x})[0];
  Tensor expected = grad({(x.cumsum(0) * weights).sum()}, {x})[0];
  EXPECT_LT(max_abs_diff(g, expected), 1e-12);
}

}  // namespace
}  // namespace kiln
