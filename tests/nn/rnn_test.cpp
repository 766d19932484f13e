// Recurrent layers and cells (kiln/nn/rnn.h) against PyTorch 1.13, under kiln::compile, and
// with bad inputs. The expected values were computed by torch.nn.LSTM / GRU / RNN and the cells in
// float64 with the parameters and inputs filled as fill() and pattern() do here (parameter k in
// named_parameters order gets 0.3 sin(0.37 i + k) over its flat index i; an input of shape s with
// phase p is cos(0.21 i + p)), and the gradients of
//   loss = sum(output * pattern(output, 1)) + sum_j sum(state_j * pattern(state_j, 2 + j)).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::error_message;

struct Expected {
  std::vector<double> output;
  std::vector<std::vector<double>> states;
  std::vector<double> grad_input;
  std::vector<double> grad_sums;  // per parameter, in named_parameters order
};

// kLstm: LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True), input (2, 3, 3)
const Expected kLstm{
    .output = {0.0560199444671, 0.122125386229,  0.0651925870314,  0.101947823202,
               -0.203918944677, -0.239813649654, -0.104470713967,  -0.077257534304,
               0.0875402142044, 0.158212577651,  0.0840320731241,  0.173084682784,
               -0.178573516339, -0.21714382497,  -0.0884794171823, -0.0874927450168,
               0.119531662926,  0.151180675402,  0.10079022473,    0.209515698144,
               -0.127889550039, -0.156013761627, -0.0734756972227, -0.0723340127798,
               0.0616162916826, 0.118387902018,  0.063555808313,   0.106124447039,
               -0.225103521149, -0.232482879863, -0.135134071999,  -0.0497596014631,
               0.104958124447,  0.14612828554,   0.08465982444,    0.178716167522,
               -0.205530741461, -0.204630933202, -0.12544610977,   -0.0569735482276,
               0.140665497428,  0.137297171484,  0.102343529111,   0.213876112244,
               -0.147924424323, -0.139039754985, -0.0957216475926, -0.0555047397547},
    .states = {std::vector<double>{
                   -0.171362693222, -0.236371017664, -0.136995030026, 0.12995473386,
                   -0.172434913804, 0.0927629948146, 0.169236853607,  0.0670921244207,
                   0.0659801952583, 0.0864630756502, -0.137945854246, -0.451943007449,
                   -0.182297115055, -0.286190231662, -0.151978383577, -0.0223338176564,
                   0.119531662926,  0.151180675402,  0.10079022473,   0.209515698144,
                   0.140665497428,  0.137297171484,  0.102343529111,  0.213876112244,
                   -0.203918944677, -0.239813649654, -0.104470713967, -0.077257534304,
                   -0.225103521149, -0.232482879863, -0.135134071999, -0.0497596014631},
               std::vector<double>{
                   -0.304258599755, -0.429727913177, -0.218508092011, 0.199958520328,
                   -0.449160709882, 0.206323838976,  0.265712389168,  0.0860705063695,
                   0.288116383773,  0.24602019243,   -0.257028934698, -0.957862099303,
                   -0.380794421761, -0.904145098386, -0.603876050584, -0.0684274840852,
                   0.198128185653,  0.291988810039,  0.214355912059,  0.4902606529,
                   0.239179731865,  0.255019636188,  0.228881052578,  0.472153996792,
                   -0.384190424679, -0.541824137325, -0.171966185909, -0.124694206175,
                   -0.433854131385, -0.519688428474, -0.224144090385, -0.0806753678484}},
    .grad_input = {0.0906018875782, 0.044652955109, -0.00733954535769, 0.0945741685633,
                   0.0854784158169, 0.0648135604871, 0.322331502792, 0.37374260203, 0.37456939339,
                   0.153408249534, 0.134651723897, 0.0976707191098, 0.0815693974392,
                   0.0925054171408, 0.0909212625948, 0.108183205233, 0.116482293186, 0.1090160492},
    .grad_sums = {4.02585037438, 1.46942697053, -5.14392205099, -5.14392205099, -4.77767955088,
                  -0.898241313958, 1.9857310292, 1.9857310292, -2.8599268007, 1.6171736567,
                  4.60302355281, 4.60302355281, 2.9385362826, 1.99921632724, -4.24058643245,
                  -4.24058643245}};
// kGru: GRU(3, 4, num_layers=2), input (3, 2, 3)
const Expected kGru{
    .output = {0.0621946307988, 0.0474327172421,  -0.153729511953, -0.28552013918,
               0.0574092094497, 0.0370886778086,  -0.146644984957, -0.26918976384,
               0.103521074624,  0.0633222540144,  -0.238044570993, -0.402243746852,
               0.0642944549152, 0.00323902622352, -0.197327830374, -0.329232005922,
               0.068910103664,  -0.0183157712721, -0.23411511544,  -0.363337544904,
               0.0311470862936, -0.073199160693,  -0.201961327215, -0.303407670994},
    .states = {std::vector<double>{-0.371891418312, 0.0191144100774, 0.327903960969, 0.141451694413,
                                   -0.361318991339, 0.160224970627, 0.433184034734, 0.100607634669,
                                   0.068910103664, -0.0183157712721, -0.23411511544,
                                   -0.363337544904, 0.0311470862936, -0.073199160693,
                                   -0.201961327215, -0.303407670994}},
    .grad_input = {0.012577644442, 0.0080945010598, 0.00251580493218, 0.00794533022614,
                   0.0189122315949, 0.0273194511386, 0.038324936513, 0.0328180964803,
                   0.0228694810455, 0.021106165673, 0.047999568325, 0.0683964545804, 0.174216219933,
                   0.161643332761, 0.127192778803, 0.230722919188, 0.238280058975, 0.213587110602},
    .grad_sums = {7.30924766275, 0.816388017494, -3.8808007768, -1.74889229672, 3.55827558385,
                  0.340555865125, -3.76323915749, -2.13657051817}};
// kRnnRelu: RNN(3, 4, nonlinearity='relu'), input (3, 2, 3), h0 = inp((1, 2, 4), 0.5)
const Expected kRnnRelu{
    .output = {1.3393954366,
               1.12291083389,
               0,
               0,
               0.396367812434,
               0.800211835141,
               0.383011608511,
               0,
               0.972218573642,
               0.565775474753,
               0,
               0,
               0.572639310638,
               0,
               0,
               0,
               0.429261359068,
               0,
               0,
               0,
               0.169770139451,
               0,
               0,
               0.0638467352755},
    .states = {std::vector<double>{0.429261359068, 0, 0, 0, 0.169770139451, 0, 0, 0.0638467352755}},
    .grad_input = {-0.0186785892011, -0.0157766045177, -0.0107393304243, -0.431715208877,
                   -0.43497794825, -0.379368462901, -0.320386434886, -0.474200759115,
                   -0.563834235173, 0, -0.112974489469, -0.210658411776, 0, -0.0825880256835,
                   -0.153998149529, 0.00266895985336, -0.0452110808367, -0.0869720138303},
    .grad_sums = {-0.00845937728556, -8.06496679661, -6.87980897492, -6.87980897492}};
// kLstmProj: LSTM(3, 4, proj_size=2), unbatched input (3, 3)
const Expected kLstmProj{
    .output = {0.185387623995, 0.074635925377, 0.183567421082, 0.0745897374865, 0.101260984855,
               0.0561032312406},
    .states = {std::vector<double>{0.101260984855, 0.0561032312406},
               std::vector<double>{-0.220176903164, -0.291304735695, -0.202329349171,
                                   0.082355364847}},
    .grad_input = {0.0395223851739, 0.0436846808326, 0.0419344598747, 0.0524497899499,
                   0.0634065320277, 0.0657814974491, 0.151249419451, 0.204933403652,
                   0.230880613054},
    .grad_sums = {-1.7988796666, -0.469789560652, -2.02860514856, -2.02860514856, 0.552377710986}};
// LSTMCell(3, 4) on inp((2, 3)), (inp((2, 4), 0.3), inp((2, 4), 0.7))
const std::vector<double> kLstmCellH = {0.425058316086,   0.0912643046389,  -0.0989441432385,
                                        -0.0116569683001, -0.0963780026021, -0.273965669851,
                                        -0.258935180867,  -0.125984884133},
                          kLstmCellC = {0.589864666388,   0.104669765449,  -0.183866819198,
                                        -0.0486194735185, -0.141716151408, -0.38582316707,
                                        -0.441335417215,  -0.281617291739};
// GRUCell(3, 4) on unbatched inp((3)), inp((4), 0.3)
const std::vector<double> kGruCell = {0.53972883455, 0.152804379298, -0.264076919841,
                                      0.137767514682};
// RNNCell(3, 4, bias=False) on inp((2, 3)), no state
const std::vector<double> kRnnCell = {0.28287719636,   0.677365184504, 0.41546573544,
                                      -0.406132661693, 0.171354009856, 0.507999393797,
                                      0.314008235105,  -0.264566376014};

Tensor pattern(IntArrayRef shape, double phase = 0.0) {
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  return (arange(static_cast<double>(n), kFloat64) * 0.21 + phase).cos().reshape(shape);
}

void fill(nn::Module& m) {
  NoGradGuard no_grad;
  double k = 0;
  for (auto& [name, p] : m.named_parameters()) {
    p.copy_((arange(static_cast<double>(p.numel()), kFloat64) * 0.37 + k)
                .sin()
                .mul(0.3)
                .reshape(p.sizes()));
    k += 1;
  }
}

void expect_values(const Tensor& t, const std::vector<double>& want, const std::string& what) {
  SCOPED_TRACE(what);
  const std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9) << "element " << i;
}

// Runs `forward` (input -> output and states), backpropagates the loss above and compares all.
template <typename Forward>
void expect_like_pytorch(nn::Module& m, const Tensor& input, const Expected& e, Forward forward) {
  m.to(kFloat64);
  fill(m);
  const Tensor x = input.detach().requires_grad_();
  auto [out, states] = forward(x);
  expect_values(out, e.output, "output");
  Tensor loss = (out * pattern(out.sizes(), 1.0)).sum();
  ASSERT_EQ(states.size(), e.states.size());
  for (size_t j = 0; j < states.size(); ++j) {
    expect_values(states[j], e.states[j], "state " + std::to_string(j));
    loss = loss + (states[j] * pattern(states[j].sizes(), 2.0 + static_cast<double>(j))).sum();
  }
  m.zero_grad();
  loss.backward();
  expect_values(x.grad(), e.grad_input, "input gradient");
  const auto params = m.named_parameters();
  ASSERT_EQ(params.size(), e.grad_sums.size());
  for (size_t k = 0; k < params.size(); ++k)
    EXPECT_NEAR(params[k].second.grad().sum().item<double>(), e.grad_sums[k], 1e-9)
        << params[k].first;
}

using States = std::vector<Tensor>;

// Same sizes and |a - b| <= tol everywhere.
bool allclose(const Tensor& a, const Tensor& b, double tol, double = 0) {
  return a.sizes().vec() == b.sizes().vec() && (a - b).abs().max().item<double>() <= tol;
}

TEST(Recurrent, LstmTwoLayersBidirectionalBatchFirstMatchesPyTorch) {
  nn::LSTM lstm(3, 4, {.num_layers = 2, .batch_first = true, .bidirectional = true});
  expect_like_pytorch(lstm, pattern({2, 3, 3}), kLstm, [&](const Tensor& x) {
    auto [out, hc] = lstm.forward(x, {});
    return std::pair{out, States{std::get<0>(hc), std::get<1>(hc)}};
  });
}

TEST(Recurrent, GruTwoLayersMatchesPyTorch) {
  nn::GRU gru(3, 4, {.num_layers = 2});
  expect_like_pytorch(gru, pattern({3, 2, 3}), kGru, [&](const Tensor& x) {
    auto [out, h] = gru.forward(x, Tensor());
    return std::pair{out, States{h}};
  });
}

TEST(Recurrent, RnnReluWithAnInitialStateMatchesPyTorch) {
  nn::RNN rnn(3, 4, {.nonlinearity = "relu"});
  expect_like_pytorch(rnn, pattern({3, 2, 3}), kRnnRelu, [&](const Tensor& x) {
    auto [out, h] = rnn.forward(x, pattern({1, 2, 4}, 0.5));
    return std::pair{out, States{h}};
  });
}

TEST(Recurrent, UnbatchedLstmWithAProjectionMatchesPyTorch) {
  nn::LSTM lstm(3, 4, {.proj_size = 2});
  expect_like_pytorch(lstm, pattern({3, 3}), kLstmProj, [&](const Tensor& x) {
    auto [out, hc] = lstm.forward(x, {});
    return std::pair{out, States{std::get<0>(hc), std::get<1>(hc)}};
  });
}

TEST(Recurrent, CellsMatchPyTorch) {
  nn::LSTMCell lstm(3, 4);
  lstm.to(kFloat64);
  fill(lstm);
  auto [h, c] = lstm.forward(pattern({2, 3}), {pattern({2, 4}, 0.3), pattern({2, 4}, 0.7)});
  expect_values(h, kLstmCellH, "LSTMCell h");
  expect_values(c, kLstmCellC, "LSTMCell c");
  nn::GRUCell gru(3, 4);
  gru.to(kFloat64);
  fill(gru);
  expect_values(gru.forward(pattern({3}), pattern({4}, 0.3)), kGruCell, "GRUCell");
  nn::RNNCell rnn(3, 4, /*bias=*/false);
  rnn.to(kFloat64);
  fill(rnn);
  expect_values(rnn.forward(pattern({2, 3})), kRnnCell, "RNNCell");
}

TEST(Recurrent, ParametersHavePyTorchsNamesAndShapes) {
  nn::LSTM lstm(3, 5, {.num_layers = 2, .bidirectional = true, .proj_size = 2});
  std::vector<std::string> names;
  for (auto& [name, p] : lstm.named_parameters()) names.push_back(name);
  ASSERT_EQ(names.size(), 20u);
  EXPECT_EQ(names[0], "weight_ih_l0");
  EXPECT_EQ(names[4], "weight_hr_l0");
  EXPECT_EQ(names[5], "weight_ih_l0_reverse");
  EXPECT_EQ(names[19], "weight_hr_l1_reverse");
  const auto p = lstm.named_parameters();
  EXPECT_EQ(p[0].second.sizes().vec(), (std::vector<int64_t>{20, 3}));
  EXPECT_EQ(p[1].second.sizes().vec(), (std::vector<int64_t>{20, 2}));   // hh takes proj_size
  EXPECT_EQ(p[10].second.sizes().vec(), (std::vector<int64_t>{20, 4}));  // 2 directions x 2
  EXPECT_EQ(p[4].second.sizes().vec(), (std::vector<int64_t>{2, 5}));
  // U(-1/sqrt(hidden), 1/sqrt(hidden)), as PyTorch.
  for (const Tensor& t : lstm.parameters())
    EXPECT_LE(t.abs().max().item<double>(), 1 / std::sqrt(5.0));
  EXPECT_EQ(lstm.flat_weights().size(), 20u);
  EXPECT_EQ(fmt::format("{}", lstm.extra_repr()),
            "3, 5, proj_size=2, num_layers=2, bidirectional=True");
}

TEST(Recurrent, DropoutActsBetweenLayersOnlyInTraining) {
  manual_seed(1);
  nn::LSTM lstm(4, 8, {.num_layers = 2, .dropout = 0.5});
  const Tensor x = randn({5, 3, 4});
  lstm.eval();
  const Tensor a = lstm.forward(x), b = lstm.forward(x);
  EXPECT_TRUE(allclose(a, b, 0, 0));
  lstm.train();
  EXPECT_FALSE(allclose(lstm.forward(x), a, 1e-6, 1e-6));
  nn::LSTM one_layer(4, 8, {.dropout = 0.5});  // nothing between layers: no dropout at all
  EXPECT_TRUE(allclose(one_layer.forward(x), one_layer.forward(x), 0, 0));
}

TEST(Recurrent, StatesThreadThroughCalls) {
  // Running a sequence in two halves with the state carried over equals running it whole.
  manual_seed(2);
  nn::GRU gru(3, 4, {.num_layers = 2, .bidirectional = false});
  const Tensor x = randn({6, 2, 3});
  auto [whole, h_whole] = gru.forward(x, Tensor());
  auto [first, h1] = gru.forward(x.slice(0, 0, 3), Tensor());
  auto [second, h2] = gru.forward(x.slice(0, 3, 6), h1);
  EXPECT_TRUE(allclose(cat({first, second}, 0), whole, 1e-6, 1e-6));
  EXPECT_TRUE(allclose(h2, h_whole, 1e-6, 1e-6));
  // A batch of one and a single step work.
  auto [one, h_one] = gru.forward(randn({1, 1, 3}), Tensor());
  EXPECT_EQ(one.sizes().vec(), (std::vector<int64_t>{1, 1, 4}));
  EXPECT_EQ(h_one.sizes().vec(), (std::vector<int64_t>{2, 1, 4}));
}

// Note [Stepping through a sequence eagerly]: the eager backward graph splits the projected
// sequence with one UnbindBackward node, not one select per step (whose gradients would each be
// the size of the whole sequence).
TEST(Recurrent, TheEagerBackwardSplitsTheSequenceOnce) {
  nn::GRU gru(3, 4);
  const Tensor out = gru.forward(randn({6, 2, 3}));
  std::map<std::string, int> names;
  std::vector<std::shared_ptr<autograd::Node>> todo{out.grad_fn()};
  std::set<autograd::Node*> seen;
  while (!todo.empty()) {
    std::shared_ptr<autograd::Node> n = todo.back();
    todo.pop_back();
    if (n == nullptr || !seen.insert(n.get()).second) continue;
    ++names[n->name()];
    for (const autograd::Edge& e : n->next_edges()) todo.push_back(e.node);
  }
  EXPECT_EQ(names["UnbindBackward"], 1);
  EXPECT_EQ(names["SelectBackward"], 0);
}

TEST(Recurrent, BadInputsRaiseNamingTheLayer) {
  nn::LSTM lstm(3, 4, {.num_layers = 2});
  EXPECT_NE(error_message([&] {
              lstm.forward(zeros({2, 3, 3, 1}));
            }).find("LSTM(3, 4, num_layers=2): expected an input of shape (L, N, H_in)"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              lstm.forward(zeros({2, 3, 5}));
            }).find("the input's last dim must be input_size = 3"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              lstm.forward(zeros({0, 3, 3}));
            }).find("sequence length is 0"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              lstm.forward(zeros({2, 3, 3}), {zeros({1, 3, 4}), zeros({2, 3, 4})});
            }).find("expected h0 of shape [2, 3, 4]"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              lstm.forward(zeros({2, 3, 3}), {zeros({2, 3, 4}), Tensor()});
            }).find("pass both h0 and c0"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              lstm.forward(zeros({2, 3, 3}, TensorOptions().dtype(kInt64)));
            }).find("expected a floating input"),
            std::string::npos);
  EXPECT_THROW(lstm.forward(Tensor()), ValueError);
  EXPECT_THROW(nn::LSTM(3, 0), ValueError);
  EXPECT_THROW(nn::LSTM(3, 4, {.num_layers = 0}), ValueError);
  EXPECT_THROW(nn::LSTM(3, 4, {.dropout = 1.5}), ValueError);
  EXPECT_THROW(nn::LSTM(3, 4, {.proj_size = 4}), ValueError);
  EXPECT_THROW(nn::GRU(3, 4, {.proj_size = 2}), ValueError);
  EXPECT_THROW(nn::RNN(3, 4, {.nonlinearity = "sigmoid"}), ValueError);
  nn::GRUCell cell(3, 4);
  EXPECT_NE(error_message([&] {
              cell.forward(zeros({2, 3}), zeros({3, 4}));
            }).find("expected hx of shape [2, 4]"),
            std::string::npos);
}

// ---- under kiln::compile: one scan node per layer and direction ----

class CompiledRecurrent : public ::testing::TestWithParam<const char*> {};

TEST_P(CompiledRecurrent, AnLstmTrainingStepEqualsEager) {
  manual_seed(3);
  nn::LSTM lstm(3, 5, {.num_layers = 2, .batch_first = true, .bidirectional = true});
  lstm.to(kFloat64);
  auto loss_of = [](nn::Module& m, const Tensor& x) {
    auto [out, hc] = static_cast<nn::LSTM&>(m).forward(x, {});
    return (out * out).sum() + std::get<1>(hc).sum();
  };
  auto compiled = compile(loss_of, {.backend = GetParam(), .fullgraph = true});
  for (int64_t length : {4, 7}) {
    SCOPED_TRACE(length);
    const Tensor x = randn({2, length, 3}, TensorOptions().dtype(kFloat64));
    lstm.zero_grad();
    const Tensor eager = loss_of(lstm, x);
    eager.backward();
    std::vector<Tensor> eager_grads;
    for (const Tensor& p : lstm.parameters()) eager_grads.push_back(p.grad().clone());
    lstm.zero_grad();
    const Tensor got = compiled(lstm, x);
    got.backward();
    testing::expect_close(got, eager, 1e-10);
    const std::vector<Tensor> params = lstm.parameters();
    for (size_t k = 0; k < params.size(); ++k)
      testing::expect_close(params[k].grad(), eager_grads[k], 1e-10);
  }
  EXPECT_EQ(compiled.stats().graph_breaks, 0);
}

TEST_P(CompiledRecurrent, GruAndRnnWithStatesEqualEager) {
  manual_seed(4);
  nn::GRU gru(4, 3);
  nn::RNN rnn(3, 2, {.bias = false, .nonlinearity = "relu"});
  auto fn = [](nn::Module& g, nn::Module& r, const Tensor& x, const Tensor& h0) {
    auto [y, h] = static_cast<nn::GRU&>(g).forward(x, h0);
    auto [z, hr] = static_cast<nn::RNN&>(r).forward(y, Tensor());
    return std::make_tuple(z, h, hr);
  };
  auto compiled = compile(fn, {.backend = GetParam(), .fullgraph = true});
  for (int call = 0; call < 2; ++call) {
    const Tensor x = randn({5, 2, 4}), h0 = randn({1, 2, 3});
    auto [z, h, hr] = compiled(gru, rnn, x, h0);
    auto [ez, eh, ehr] = fn(gru, rnn, x, h0);
    testing::expect_equal(z, ez);
    testing::expect_equal(h, eh);
    testing::expect_equal(hr, ehr);
    NoGradGuard no_grad;
    gru.named_parameters()[1].second.mul_(0.5);  // weights changed in place between calls
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledRecurrent, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace kiln
