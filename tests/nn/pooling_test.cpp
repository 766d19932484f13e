// The 1-d and 3-d pooling layers and the adaptive max pools (kiln/nn/pooling.h) against PyTorch
// 1.13, under kiln::compile, and with bad inputs. The expected values were computed by torch.nn's
// layers in float64 on inputs pattern(shape, 0) (element i is cos(0.37 i + phase)), with
// grad_check = sum(x.grad * pattern(x.shape, 2)) for the loss sum(output * pattern(output, 1)).
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <utility>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln::nn {
namespace {

using testing::error_message;

struct Expected {
  std::vector<int64_t> shape;
  std::vector<double> values;
  std::vector<int64_t> indices;  // empty for the average pools
  double grad_check = 0;
};

// MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True), input [2, 2, 7] -> [2,
// 2, 4]
const Expected k_max1d{.shape = {2, 2, 4},
                       .values = {1.0, 0.932327345606, 0.444661516742, -0.275590246825,
                                  -0.851690981487, -0.84810003171, -0.269033103117, 0.097456088588,
                                  0.743046440966, 0.999976780071, 0.999976780071, 0.733856382117,
                                  0.083882949563, -0.28213459216, -0.855242378854, -0.844469696289},
                       .indices = {0, 1, 3, 5, 0, 3, 5, 6, 1, 3, 3, 5, 0, 1, 3, 6},
                       .grad_check = -3.244996703052};

// MaxPool1d(kernel_size=2, stride=1, padding=1, dilation=2, ceil_mode=False), input [1, 2, 6] ->
// [1, 2, 6]
const Expected k_max1d_dilated{
    .shape = {1, 2, 6},
    .values = {0.932327345606, 1.0, 0.932327345606, 0.73846855873, 0.444661516742, 0.090671624464,
               -0.851690981487, -0.604552271058, -0.851690981487, -0.84810003171, -0.599109926408,
               -0.84810003171},
    .indices = {1, 0, 1, 2, 3, 4, 1, 0, 1, 4, 5, 4},
    .grad_check = 2.414852752395};

// MaxPool3d(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(1, 1, 2),
// ceil_mode=False), input [1, 2, 3, 4, 5] -> [1, 2, 4, 2, 2]
const Expected k_max3d{.shape = {1, 2, 4, 2, 2},
                       .values = {1.0,
                                  0.73846855873,
                                  0.999976780071,
                                  0.999976780071,
                                  1.0,
                                  0.73846855873,
                                  0.999976780071,
                                  0.999976780071,
                                  0.438547327574,
                                  0.752098473532,
                                  0.939524893748,
                                  0.999907121361,
                                  0.111011124437,
                                  0.752098473532,
                                  0.939524893748,
                                  0.924740135178,
                                  0.941836960194,
                                  0.941836960194,
                                  0.941836960194,
                                  0.941836960194,
                                  0.999419555683,
                                  0.944105287865,
                                  0.999419555683,
                                  0.941836960194,
                                  0.999419555683,
                                  0.999164195766,
                                  0.999419555683,
                                  0.998862434804,
                                  0.999164195766,
                                  0.999164195766,
                                  0.769781759838,
                                  0.998862434804},
                       .indices = {0, 2, 17, 17, 0,  2,  17, 17, 20, 49, 50, 34, 47, 49, 50, 52,
                                   7, 7, 7,  7,  25, 24, 25, 7,  25, 42, 25, 59, 42, 42, 57, 59},
                       .grad_check = 3.248661721516};

// MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=True), input [2, 1, 3, 3, 5]
// -> [2, 1, 2, 2, 3]
const Expected k_max3d_ceil{.shape = {2, 1, 2, 2, 3},
                            .values = {1.0,
                                       0.999976780071,
                                       0.733856382117,
                                       -0.599109926408,
                                       0.097456088588,
                                       0.450755055891,
                                       0.927312308723,
                                       0.937169195899,
                                       0.999907121361,
                                       -0.615352482955,
                                       -0.979659909134,
                                       -0.840800143814,
                                       0.999791027107,
                                       0.999628502698,
                                       0.922125016831,
                                       0.71981623582,
                                       0.063494813734,
                                       -0.62603838865,
                                       0.12454553916,
                                       0.761010798332,
                                       0.944105287865,
                                       0.999419555683,
                                       0.715069039371,
                                       0.05669245011},
                            .indices = {0, 17, 19, 11, 13, 14, 35, 33, 34, 40, 43, 44,
                                        6, 23, 24, 25, 27, 29, 36, 38, 39, 40, 42, 44},
                            .grad_check = -1.352356647639};

// AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,)), input [2, 2, 7] -> [2, 2, 4]
const Expected k_avg1d{
    .shape = {2, 2, 4},
    .values = {0.966163672803, 0.705152473692, 0.086580964794, -0.440071258941, -0.91762414726,
               -0.937987040361, -0.572081020412, -0.085788507264, 0.596900748429, 0.892597732361,
               0.887891526735, 0.586201854846, -0.099125821298, -0.582447837133, -0.940337391305,
               -0.912737158941},
    .grad_check = -3.011690861418};

// AvgPool3d(kernel_size=3, stride=2, padding=1), input [1, 2, 4, 5, 5] -> [1, 2, 3, 3, 3]
const Expected k_avg3d{
    .shape = {1, 2, 3, 3, 3},
    .values = {-0.013056343646, -0.022291501755, -0.012946476135, 0.003479389708,  0.00777997589,
               0.005595876426,  -0.004366055937, -0.016665286667, -0.015073838717, -0.061562536923,
               -0.031274240464, 0.02508143989,   0.029257177525,  0.026898296687,  0.002119423695,
               -0.084937361128, -0.103413998657, -0.035694061527, -0.109550492647, -0.079878826457,
               0.016372619238,  0.047846319466,  0.05107630508,   0.01173369316,   -0.130031090982,
               -0.175876311943, -0.07512691467,  -0.004862998267, -0.017159989904, -0.015153962896,
               -0.000245739049, 0.004071631594,  0.004995257664,  0.006093491044,  -0.003227951241,
               -0.009858864741, -0.084809165556, -0.101034429506, -0.03304651285,  0.030218144184,
               0.044735781932,  0.021965709918,  -0.066502595072, -0.122971713491, -0.076942711534,
               -0.13061387057,  -0.173188034047, -0.071408285086, 0.043477746145,  0.071227901553,
               0.039608907583,  -0.087092891209, -0.183472491636, -0.126925984101},
    .grad_check = 0.018761652575};

// AvgPool3d(kernel_size=(2, 2, 3), stride=(1, 2, 2), padding=(1, 0, 1)), input [1, 1, 3, 4, 5] ->
// [1, 1, 4, 2, 3]
const Expected k_avg3d_divisor{
    .shape = {1, 1, 4, 2, 3},
    .values = {0.210436965545,  -0.0648686289,  -0.286105589633, 0.046121291779,  0.418780246639,
               0.442381788923,  -0.07823093804, -0.710335080909, -0.750368018427, 0.489638516368,
               1.094840236833,  0.787481961164, -0.752293944477, -1.146732998243, -0.585358934042,
               0.786402519965,  0.850248347513, 0.205403899882,  -0.463626040892, -0.501266546234,
               -0.121096505248, 0.342885295375, 0.17418835732,   -0.139696272359},
    .grad_check = 0.764570675264};

// AdaptiveAvgPool1d(output_size=3), input [2, 2, 7] -> [2, 2, 3]
const Expected k_adaptive_avg1d{
    .shape = {2, 2, 3},
    .values = {0.890265301445, 0.424600566645, -0.263156964473, -0.93918402362, -0.809837911485,
               -0.256895646979, 0.709523824301, 0.954862724711, 0.700748375903, -0.269406060994,
               -0.816658030903, -0.936746497117},
    .grad_check = -0.943870411769};

// AdaptiveAvgPool3d(output_size=(2, 3, 2)), input [1, 2, 3, 5, 4] -> [1, 2, 2, 3, 2]
const Expected k_adaptive_avg3d{
    .shape = {1, 2, 2, 3, 2},
    .values = {0.053728931008, -0.373836078438, -0.277809040932, -0.087236909391, 0.576193956421,
               0.571642908878, -0.52757824803,  -0.603504146986, 0.035329477821,  0.246150547646,
               0.447469815972, 0.0453658546,    0.074589563513,  0.467121029956,  0.235514138977,
               0.019726873256, -0.608610148145, -0.511851067969, 0.581887100014,  0.565203541926,
               -0.10222814459, -0.285831903998, -0.350088135516, 0.082910924334},
    .grad_check = -1.370787540154};

// AdaptiveMaxPool1d(output_size=3), input [2, 2, 7] -> [2, 2, 3]
const Expected k_adaptive_max1d{
    .shape = {2, 2, 3},
    .values = {1.0, 0.73846855873, 0.090671624464, -0.851690981487, -0.599109926408, 0.097456088588,
               0.934769976045, 0.999976780071, 0.929841418017, 0.083882949563, -0.609966540386,
               -0.844469696289},
    .indices = {0, 2, 4, 0, 4, 6, 2, 3, 4, 0, 2, 6},
    .grad_check = -0.196144050701};

// AdaptiveMaxPool2d(output_size=(2, 3)), input [1, 2, 5, 7] -> [1, 2, 2, 3]
const Expected k_adaptive_max2d{
    .shape = {1, 2, 2, 3},
    .values = {1.0, 0.999976780071, 0.929841418017, 0.934769976045, 0.999976780071, 0.999907121361,
               0.999791027107, 0.999791027107, 0.724530004105, 0.999791027107, 0.999791027107,
               0.999628502698},
    .indices = {0, 17, 18, 16, 17, 34, 16, 16, 18, 16, 16, 33},
    .grad_check = 2.062554117747};

// AdaptiveMaxPool3d(output_size=(2, 2, 3)), input [1, 2, 3, 4, 5] -> [1, 2, 2, 2, 3]
const Expected k_adaptive_max3d{.shape = {1, 2, 2, 2, 3},
                                .values = {1.0,
                                           0.932327345606,
                                           0.444661516742,
                                           0.934769976045,
                                           0.999976780071,
                                           0.999907121361,
                                           0.438547327574,
                                           0.462879053176,
                                           0.752098473532,
                                           0.999791027107,
                                           0.999791027107,
                                           0.999907121361,
                                           0.999419555683,
                                           0.999628502698,
                                           0.999628502698,
                                           0.71981623582,
                                           0.420083704101,
                                           0.48090313126,
                                           0.999419555683,
                                           0.999164195766,
                                           0.944105287865,
                                           0.486866862139,
                                           0.948510307554,
                                           0.998862434804},
                                .indices = {0,  1, 3, 16, 17, 34, 20, 48, 49, 51, 51, 34,
                                            25, 8, 8, 10, 11, 39, 25, 42, 24, 56, 58, 59},
                                .grad_check = -1.534749877833};

Tensor pattern(IntArrayRef shape, double phase) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = std::cos(0.37 * static_cast<double>(i) + phase);
  return from_vector(v, std::vector<int64_t>(shape.begin(), shape.end()));
}

// Runs `pool` (values, and indices when it returns them) on pattern(input, 0) and compares with
// PyTorch's output and input gradient.
template <typename Pool>
void check(const Expected& e, IntArrayRef input, Pool pool) {
  const Tensor x = pattern(input, 0).requires_grad_();
  auto [values, indices] = pool(x);
  ASSERT_EQ(values.sizes().vec(), e.shape);
  testing::expect_close(values.detach(), from_vector(e.values, e.shape), 1e-11);
  if (!e.indices.empty()) {
    ASSERT_TRUE(indices.defined());
    EXPECT_EQ(indices.dtype(), kInt64);
    EXPECT_EQ(indices.template to_vector<int64_t>(), e.indices);
  }
  (values * pattern(values.sizes(), 1)).sum().backward();
  EXPECT_NEAR((x.grad() * pattern(input, 2)).sum().template item<double>(), e.grad_check, 1e-10);
}

template <typename M>
auto with_indices(M& m) {
  return [&m](const Tensor& x) {
    auto [values, indices] = m.forward_with_indices(x);
    testing::expect_equal(m.forward(x), values);
    return std::pair{values, indices};
  };
}
template <typename M>
auto values_only(M& m) {
  return [&m](const Tensor& x) { return std::pair{m.forward(x), Tensor()}; };
}

TEST(Pooling, MaxPool1dAnd3dMatchPyTorch) {
  MaxPool1d a(3, {.stride = 2, .padding = 1, .ceil_mode = true});
  check(k_max1d, {2, 2, 7}, with_indices(a));
  MaxPool1d b(2, {.stride = 1, .padding = 1, .dilation = 2});
  check(k_max1d_dilated, {1, 2, 6}, with_indices(b));
  MaxPool3d c(
      {2, 3, 2},
      {.stride = ExpandingArray<3>({1, 2, 2}), .padding = {1, 1, 0}, .dilation = {1, 1, 2}});
  check(k_max3d, {1, 2, 3, 4, 5}, with_indices(c));
  MaxPool3d d(2, {.ceil_mode = true});
  check(k_max3d_ceil, {2, 1, 3, 3, 5}, with_indices(d));
}

TEST(Pooling, AvgPool1dAnd3dMatchPyTorch) {
  AvgPool1d a(3, {.stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false});
  check(k_avg1d, {2, 2, 7}, values_only(a));
  AvgPool3d b(3, {.stride = 2, .padding = 1, .ceil_mode = true});
  check(k_avg3d, {1, 2, 4, 5, 5}, values_only(b));
  AvgPool3d c(
      {2, 2, 3},
      {.stride = ExpandingArray<3>({1, 2, 2}), .padding = {1, 0, 1}, .divisor_override = 5});
  check(k_avg3d_divisor, {1, 1, 3, 4, 5}, values_only(c));
}

TEST(Pooling, AdaptivePoolsMatchPyTorch) {
  AdaptiveAvgPool1d a(3);
  check(k_adaptive_avg1d, {2, 2, 7}, values_only(a));
  AdaptiveAvgPool3d b({2, 3, 2});
  check(k_adaptive_avg3d, {1, 2, 3, 5, 4}, values_only(b));
  AdaptiveMaxPool1d c(3);
  check(k_adaptive_max1d, {2, 2, 7}, with_indices(c));
  AdaptiveMaxPool2d d({2, 3});
  check(k_adaptive_max2d, {1, 2, 5, 7}, with_indices(d));
  AdaptiveMaxPool3d e({2, 2, 3});
  check(k_adaptive_max3d, {1, 2, 3, 4, 5}, with_indices(e));
}

TEST(Pooling, UnbatchedInputsPoolEachChannel) {
  MaxPool3d max(2);
  const Tensor x = pattern({2, 4, 4, 4}, 0);
  testing::expect_equal(max.forward(x), max.forward(x.unsqueeze(0)).squeeze(0));
  AvgPool1d avg(2);
  const Tensor y = pattern({3, 6}, 0);
  testing::expect_equal(avg.forward(y), avg.forward(y.unsqueeze(0)).squeeze(0));
  AdaptiveMaxPool2d amax(2);
  const Tensor z = pattern({3, 5, 5}, 0);
  testing::expect_equal(amax.forward_with_indices(z).second,
                        amax.forward_with_indices(z.unsqueeze(0)).second.squeeze(0));
}

TEST(Pooling, ReprsAreTorchNns) {
  // PyTorch prints sizes as given (3 or (3, 3)); Kiln always prints tuples.
  EXPECT_EQ(MaxPool1d(3).repr(),
            "MaxPool1d(kernel_size=(3,), stride=(3,), padding=(0,), dilation=(1,), "
            "ceil_mode=False)");
  EXPECT_EQ(MaxPool3d({2, 3, 2}, {.stride = 1}).repr(),
            "MaxPool3d(kernel_size=(2, 3, 2), stride=(1, 1, 1), padding=(0, 0, 0), "
            "dilation=(1, 1, 1), ceil_mode=False)");
  EXPECT_EQ(AvgPool1d(3).repr(), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))");
  EXPECT_EQ(AvgPool3d(2, {.divisor_override = 3}).repr(),
            "AvgPool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))");
  EXPECT_EQ(AdaptiveAvgPool1d(3).repr(), "AdaptiveAvgPool1d(output_size=(3,))");
  EXPECT_EQ(AdaptiveAvgPool3d({2, 3, 2}).repr(), "AdaptiveAvgPool3d(output_size=(2, 3, 2))");
  EXPECT_EQ(AdaptiveMaxPool1d(3).repr(), "AdaptiveMaxPool1d(output_size=(3,))");
  EXPECT_EQ(AdaptiveMaxPool2d(2).repr(), "AdaptiveMaxPool2d(output_size=(2, 2))");
  EXPECT_EQ(AdaptiveMaxPool3d({1, 2, 3}).repr(), "AdaptiveMaxPool3d(output_size=(1, 2, 3))");
}

TEST(Pooling, BadInputsNameTheLayer) {
  NoGradGuard no_grad;
  MaxPool1d max1(2);
  std::string msg = error_message([&] { max1.forward(ones({2, 3, 4, 5})); });
  EXPECT_NE(msg.find("MaxPool1d(kernel_size=(2,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3, 4, 5]"), std::string::npos) << msg;
  EXPECT_THROW(max1.forward(ones({2, 3, 4, 5})), ShapeError);
  MaxPool3d max3(3);
  EXPECT_THROW(max3.forward_with_indices(ones({2, 4, 4})), ShapeError);
  msg = error_message([&] { max3.forward(ones({1, 1, 2, 4, 4})); });
  EXPECT_NE(msg.find("too small"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MaxPool3d"), std::string::npos) << msg;
  EXPECT_THROW(MaxPool1d(2, {.padding = 2}).forward(ones({1, 2, 8})), ValueError);
  EXPECT_THROW(AvgPool3d(0).forward(ones({1, 1, 4, 4, 4})), ValueError);
  msg = error_message([] { AvgPool1d(2, {.divisor_override = 2}); });
  EXPECT_NE(msg.find("AvgPool1d: divisor_override"), std::string::npos) << msg;
  EXPECT_THROW(AdaptiveMaxPool2d(2).forward(ones({2, 3, 0, 4})), ShapeError);
  EXPECT_THROW(AdaptiveAvgPool3d(-1).forward(ones({1, 2, 3, 3, 3})), ValueError);
  EXPECT_THROW(AdaptiveAvgPool1d(2).forward(Tensor()), ValueError);
  EXPECT_THROW(AvgPool3d(2).forward(ones({1, 1, 4, 4, 4}, kInt32)), DTypeError);
}

// ---- under kiln::compile: forward and input gradients equal eager, sizes 0 and 1 ----

class CompiledPooling : public ::testing::TestWithParam<const char*> {};

// Inputs of the given shapes (values pattern(shape, k) for input k) as leaves that require grad.
std::vector<Tensor> leaves(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<Tensor> out;
  for (size_t k = 0; k < shapes.size(); ++k)
    out.push_back(pattern(shapes[k], static_cast<double>(k)).requires_grad_());
  return out;
}

// fn(inputs) returns (loss, other outputs...); compiled and eager must agree on every output and
// on the inputs' gradients of the loss, for each set of input shapes. The first compile makes
// every dim symbolic (the composites' reshapes and window sizes in SymInt); later sets, with
// sizes 0 and 1, which are specialized, recompile.
template <typename Fn>
void expect_compiled_equals_eager(const char* backend, Fn fn,
                                  const std::vector<std::vector<std::vector<int64_t>>>& runs) {
  auto compiled = compile(fn, {.backend = backend, .dynamic = true, .fullgraph = true});
  for (const auto& shapes : runs) {
    SCOPED_TRACE(::testing::PrintToString(shapes));
    const std::vector<Tensor> a = leaves(shapes), b = leaves(shapes);
    auto eager = fn(a[0], a[1], a[2]);
    auto got = compiled(b[0], b[1], b[2]);
    std::get<0>(eager).backward();
    std::get<0>(got).backward();
    [&]<size_t... I>(std::index_sequence<I...>) {
      (testing::expect_equal(std::get<I>(got), std::get<I>(eager)), ...);
    }
    (std::make_index_sequence<std::tuple_size_v<decltype(eager)>>());
    for (size_t k = 0; k < a.size(); ++k) testing::expect_close(b[k].grad(), a[k].grad(), 1e-12);
  }
  EXPECT_EQ(compiled.stats().graph_breaks, 0);
}

TEST_P(CompiledPooling, MaxPoolsEqualEager) {
  MaxPool1d max1(3, {.stride = 2, .padding = 1, .ceil_mode = true});
  MaxPool3d max3(2, {.padding = 1});
  AdaptiveMaxPool1d amax1(3);
  AdaptiveMaxPool2d amax2({2, 3});
  AdaptiveMaxPool3d amax3({2, 1, 2});
  auto fn = [&](const Tensor& x1, const Tensor& x2, const Tensor& x3) {
    auto [v1, i1] = max1.forward_with_indices(x1);
    auto [v3, i3] = max3.forward_with_indices(x3);
    auto [a1, j1] = amax1.forward_with_indices(x1);
    auto [a2, j2] = amax2.forward_with_indices(x2);
    auto [a3, j3] = amax3.forward_with_indices(x3);
    const Tensor loss = v1.sin().sum() + v3.sin().sum() + max3.forward(x3).cos().sum() +
                        a1.sin().sum() + a2.sin().sum() + a3.sin().sum();
    return std::make_tuple(loss, i1, i3, j1, j2, j3);
  };
  expect_compiled_equals_eager(GetParam(), fn,
                               {{{2, 3, 7}, {2, 3, 5, 6}, {2, 2, 3, 4, 5}},
                                {{0, 3, 7}, {1, 1, 1, 1}, {1, 1, 1, 1, 1}},
                                {{1, 1, 1}, {0, 3, 5, 6}, {0, 2, 3, 4, 5}}});
}

TEST_P(CompiledPooling, AvgPoolsEqualEager) {
  AvgPool1d avg1(3, {.stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false});
  AvgPool3d avg3(3, {.stride = 2, .padding = 1, .ceil_mode = true, .divisor_override = 5});
  auto fn = [&](const Tensor& x1, const Tensor& x2, const Tensor& x3) {
    const Tensor a = avg1.forward(x1), b = avg3.forward(x3);
    return std::make_tuple(a.sin().sum() + b.sin().sum() + x2.sum(), a, b);
  };
  expect_compiled_equals_eager(
      GetParam(), fn, {{{2, 3, 7}, {1}, {3, 2, 4, 5, 3}}, {{0, 3, 7}, {1}, {1, 1, 1, 1, 1}}});
}

TEST_P(CompiledPooling, AdaptiveAvgPoolsEqualEager) {
  AdaptiveAvgPool1d avg1(3);
  AdaptiveAvgPool3d avg3({2, 3, 2});
  auto fn = [&](const Tensor& x1, const Tensor& x2, const Tensor& x3) {
    const Tensor a = avg1.forward(x1), b = avg3.forward(x3);
    return std::make_tuple(a.sin().sum() + b.sin().sum() + x2.sum(), a, b);
  };
  expect_compiled_equals_eager(
      GetParam(), fn, {{{2, 3, 7}, {1}, {3, 2, 4, 5, 3}}, {{0, 3, 7}, {1}, {1, 1, 1, 1, 1}}});
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledPooling, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace kiln::nn
