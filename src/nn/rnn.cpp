#include "kiln/nn/rnn.h"

#include <cmath>

#include "kiln/autograd.h"
#include "kiln/control_flow.h"
#include "kiln/nn/init.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/random.h"
#include "kiln/ops/shape.h"
#include "kiln/ops/unary.h"
#include "src/autograd/autograd_meta.h"
#include "src/core/shape.h"
#include "src/core/tracing_hooks.h"
#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

// Note [Recurrent cells]
// One step of each cell, as PyTorch computes it (x the step's input, h and c the states):
//   RNN:  h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)             act = tanh or relu
//   LSTM: i, f, g, o = chunks of x W_ih^T + b_ih + h W_hh^T + b_hh  (4 of hidden each)
//         c' = sigmoid(f) * c + sigmoid(i) * tanh(g);  h' = sigmoid(o) * tanh(c')
//         with proj_size, h' = (sigmoid(o) * tanh(c')) W_hr^T
//   GRU:  r, z, n_x = chunks of x W_ih^T + b_ih; r_h, z_h, n_h = chunks of h W_hh^T + b_hh
//         r = sigmoid(r + r_h); z = sigmoid(z + z_h); n = tanh(n_x + r * n_h)
//         h' = (1 - z) * n + z * h
// GRU's reset gate multiplies h W_hh^T + b_hh, not h, which is why the two products are kept
// apart for every cell. `projected` is x W_ih^T + b_ih: computed by the caller, once for a whole
// sequence in a layer.
struct CellWeights {
  Tensor w_hh, b_hh, w_hr;  // b_hh and w_hr may be undefined
};

int64_t gate_count(RecurrentMode mode) {
  switch (mode) {
    case RecurrentMode::Lstm:
      return 4;
    case RecurrentMode::Gru:
      return 3;
    default:
      return 1;
  }
}

std::vector<Tensor> cell_step(RecurrentMode mode, const Tensor& projected,
                              const std::vector<Tensor>& states, const CellWeights& w) {
  const Tensor& h = states[0];
  const Tensor hidden = linear(h, w.w_hh, w.b_hh);
  switch (mode) {
    case RecurrentMode::RnnTanh:
      return {tanh(projected + hidden)};
    case RecurrentMode::RnnRelu:
      return {relu(projected + hidden)};
    case RecurrentMode::Lstm: {
      const std::vector<Tensor> gates = (projected + hidden).chunk(4, -1);
      const Tensor c = sigmoid(gates[1]) * states[1] + sigmoid(gates[0]) * tanh(gates[2]);
      Tensor next_h = sigmoid(gates[3]) * tanh(c);
      if (w.w_hr.defined()) next_h = linear(next_h, w.w_hr);
      return {next_h, c};
    }
    case RecurrentMode::Gru: {
      const std::vector<Tensor> x = projected.chunk(3, -1), hh = hidden.chunk(3, -1);
      const Tensor r = sigmoid(x[0] + hh[0]);
      const Tensor z = sigmoid(x[1] + hh[1]);
      const Tensor n = tanh(x[2] + r * hh[2]);
      return {(1 - z) * n + z * h};
    }
  }
  return {};
}

RecurrentMode rnn_mode(const std::string& nonlinearity) {
  KILN_CHECK(nonlinearity == "tanh" || nonlinearity == "relu", ValueError,
             "RNN: nonlinearity must be \"tanh\" or \"relu\", got \"{}\"", nonlinearity);
  return nonlinearity == "tanh" ? RecurrentMode::RnnTanh : RecurrentMode::RnnRelu;
}

int64_t check_non_negative(std::string_view who, std::string_view what, int64_t value) {
  KILN_CHECK(value >= 0, ValueError, "{}: {} must be >= 0, got {}", who, what, value);
  return value;
}

// Checks a layer's options before anything is allocated.
RNNOptions checked(const char* who, RecurrentMode mode, int64_t input_size, int64_t hidden_size,
                   RNNOptions options) {
  check_positive(who, "hidden_size", hidden_size);
  check_non_negative(who, "input_size", input_size);
  check_positive(who, "num_layers", options.num_layers);
  KILN_CHECK(options.dropout >= 0 && options.dropout <= 1, ValueError,
             "{}: dropout must be a probability in [0, 1], got {}", who, options.dropout);
  KILN_CHECK(options.proj_size >= 0, ValueError, "{}: proj_size must be >= 0, got {}", who,
             options.proj_size);
  KILN_CHECK(options.proj_size == 0 || mode == RecurrentMode::Lstm, ValueError,
             "{}: proj_size is an LSTM option; got proj_size={}", who, options.proj_size);
  KILN_CHECK(options.proj_size < hidden_size, ValueError,
             "{}: proj_size ({}) must be smaller than hidden_size ({})", who, options.proj_size,
             hidden_size);
  if (mode == RecurrentMode::RnnTanh || mode == RecurrentMode::RnnRelu)
    rnn_mode(options.nonlinearity);
  return options;
}

// The input's last dim is input_size and its dtype floating (after the caller checked its rank).
void check_features(const Module& module, const Tensor& input, int64_t input_size) {
  KILN_CHECK(
      static_cast<bool>(input.sym_sizes()[static_cast<size_t>(input.dim() - 1)] == input_size),
      ShapeError, "{}: the input's last dim must be input_size = {}, got an input of shape {}",
      describe(module), input_size, shape_str(input.sym_sizes()));
  KILN_CHECK(input.is_floating_point(), DTypeError,
             "{}: expected a floating input, got {}; convert it with .to(kiln::kFloat32)",
             describe(module), dtype_name(input.dtype()));
}

// The state tensor `given` (undefined: zeros) as (layers * directions, N, size), checked.
Tensor initial_state(const Module& module, const char* what, const Tensor& given, bool batched,
                     const std::vector<SymInt>& expected, const Tensor& input) {
  if (!given.defined()) return zeros(expected, TensorOptions().dtype(input.dtype()));
  const std::vector<SymInt> shown =
      batched ? expected : std::vector<SymInt>{expected[0], expected[2]};
  KILN_CHECK(shapes_equal(given.sym_sizes(), shown), ShapeError,
             "{}: expected {} of shape {} for an input of shape {}, got {}", describe(module), what,
             shape_str(shown), shape_str(input.sym_sizes()), shape_str(given.sym_sizes()));
  KILN_CHECK(given.dtype() == input.dtype(), DTypeError,
             "{}: {} is {} but the input is {}; pass states of the input's dtype", describe(module),
             what, dtype_name(given.dtype()), dtype_name(input.dtype()));
  return batched ? given : given.unsqueeze(1);
}

// Note [Stepping through a sequence eagerly]
// Eagerly, kiln::scan takes each step's slice with select, whose backward is a zero tensor of the
// whole sequence with the step's gradient in it: L steps cost L sequence-sized tensors and their
// sum, O(L^2) time and memory traffic (most of an eager LSTM step at L = 128). PyTorch's eager
// RNNs split the sequence with unbind, one node whose backward stacks the steps' gradients; so
// do these layers outside kiln::compile (RNNBase::run). Under a trace the loop is a scan
// (Note [A recurrent layer as a scan]), whose backward is a reverse scan with no such cost.
class UnbindBackward final : public autograd::Node {
 public:
  std::string name() const override { return "UnbindBackward"; }
  autograd::TensorList apply(autograd::TensorList&& grads) override {
    std::vector<Tensor> steps;
    for (size_t k = 0; k < input_metadata().size(); ++k) {
      const bool given = k < grads.size() && grads[k].defined();
      steps.push_back(given ? grads[k]
                            : zeros(input_metadata()[k].sizes,
                                    TensorOptions().dtype(input_metadata()[k].dtype)));
    }
    return {stack(steps, 0)};
  }
};

// The slices of `x` along dim 0, differentiable through one UnbindBackward node.
std::vector<Tensor> unbind_steps(const Tensor& x) {
  const bool differentiable = GradMode::is_enabled() && autograd::requires_grad(x);
  const Tensor base = differentiable ? x.detach() : x;
  std::vector<Tensor> steps;
  for (int64_t i = 0; i < x.size(0); ++i) steps.push_back(base.select(0, i));
  if (!differentiable) return steps;
  auto node = std::make_shared<UnbindBackward>();
  node->mutable_next_edges().push_back(autograd::gradient_edge(x));
  for (const Tensor& s : steps) autograd::set_history(s, node, node->add_input_metadata(s));
  return steps;
}

}  // namespace

// ---- RNNBase ----

RNNBase::RNNBase(std::string name, RecurrentMode mode, int64_t input_size, int64_t hidden_size,
                 RNNOptions options)
    : Module(name),
      mode(mode),
      input_size(input_size),
      hidden_size(hidden_size),
      options(checked(name.c_str(), mode, input_size, hidden_size, std::move(options))) {
  const int64_t gates = gate_count(mode) * hidden_size;
  for (int64_t layer = 0; layer < this->options.num_layers; ++layer) {
    for (int64_t direction = 0; direction < directions(); ++direction) {
      const std::string suffix = fmt::format("_l{}{}", layer, direction == 1 ? "_reverse" : "");
      const int64_t layer_input = layer == 0 ? input_size : output_size() * directions();
      std::vector<Tensor*> slots;
      slots.push_back(&register_parameter("weight_ih" + suffix, empty({gates, layer_input})));
      slots.push_back(&register_parameter("weight_hh" + suffix, empty({gates, output_size()})));
      if (this->options.bias) {
        slots.push_back(&register_parameter("bias_ih" + suffix, empty({gates})));
        slots.push_back(&register_parameter("bias_hh" + suffix, empty({gates})));
      }
      if (this->options.proj_size > 0)
        slots.push_back(&register_parameter("weight_hr" + suffix,
                                            empty({this->options.proj_size, hidden_size})));
      slots_.push_back(std::move(slots));
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  for (const std::vector<Tensor*>& slots : slots_)
    for (Tensor* t : slots) init::uniform_(*t, -bound, bound);
}

std::vector<Tensor> RNNBase::layer_parameters(int64_t layer, int64_t direction) const {
  KILN_CHECK(layer >= 0 && layer < options.num_layers && direction >= 0 && direction < directions(),
             IndexError, "{}: no layer {} direction {} (it has {} layers, {} directions)",
             describe(*this), layer, direction, options.num_layers, directions());
  std::vector<Tensor> out;
  for (Tensor* t : slots_[static_cast<size_t>(layer * directions() + direction)]) out.push_back(*t);
  return out;
}

std::vector<Tensor> RNNBase::flat_weights() const {
  std::vector<Tensor> out;
  for (const std::vector<Tensor*>& slots : slots_)
    for (Tensor* t : slots) out.push_back(*t);
  return out;
}

std::string RNNBase::extra_repr() const {
  std::string s = fmt::format("{}, {}", input_size, hidden_size);
  if (options.proj_size != 0) s += fmt::format(", proj_size={}", options.proj_size);
  if (options.num_layers != 1) s += fmt::format(", num_layers={}", options.num_layers);
  if (mode == RecurrentMode::RnnRelu) s += ", nonlinearity='relu'";
  if (!options.bias) s += ", bias=False";
  if (options.batch_first) s += ", batch_first=True";
  if (options.dropout != 0) s += ", dropout=" + py_float(options.dropout);
  if (options.bidirectional) s += ", bidirectional=True";
  return s;
}

// Note [A recurrent layer as a scan]
// A layer's input projection x W_ih^T + b_ih does not depend on the state, so it is one product
// over the whole sequence ((L, N, H_in) -> (L, N, G * hidden)) and only h W_hh^T is left to each
// step: the loop body is the cell of Note [Recurrent cells] on a slice of the projection, written
// as kiln::scan (the backward direction: scan with reverse, whose outputs stay in time order). So
// the same code runs eagerly (scan is a loop; autograd records the steps) and under kiln::compile,
// where each layer and direction is one scan node whatever the sequence length, differentiated by
// a reverse scan (Note [A scan's backward] in src/aot/higher_order_autograd.cpp) instead of an
// unrolled graph of L steps.
std::pair<Tensor, std::vector<Tensor>> RNNBase::run(const Tensor& input,
                                                    const std::vector<Tensor>& states) const {
  check_input_defined(input);
  KILN_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError,
             "{}: expected an input of shape (L, N, H_in){} or unbatched (L, H_in), got shape {}",
             describe(*this), options.batch_first ? " (batch_first: (N, L, H_in))" : "",
             shape_str(input.sym_sizes()));
  check_features(*this, input, input_size);
  const bool batched = input.dim() == 3;
  Tensor x = !batched ? input.unsqueeze(1) : options.batch_first ? input.transpose(0, 1) : input;
  KILN_CHECK(static_cast<bool>(x.sym_sizes()[0] > 0), ValueError,
             "{}: the input's sequence length is 0 (shape {}); a recurrent layer needs at least "
             "one step",
             describe(*this), shape_str(input.sym_sizes()));
  const SymInt batch = x.sym_sizes()[1], layers_dirs = options.num_layers * directions();
  const char* names[] = {"h0", "c0"};
  const int64_t sizes[] = {output_size(), hidden_size};
  std::vector<Tensor> initial;
  for (size_t k = 0; k < states.size(); ++k)
    initial.push_back(initial_state(*this, names[k], states[k], batched,
                                    {layers_dirs, batch, SymInt(sizes[k])}, input));

  std::vector<std::vector<Tensor>> finals(states.size());
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    std::vector<Tensor> outputs;
    for (int64_t direction = 0; direction < directions(); ++direction) {
      const std::vector<Tensor> p = layer_parameters(layer, direction);
      const Tensor b_ih = options.bias ? p[2] : Tensor();
      const CellWeights w{p[1], options.bias ? p[3] : Tensor(),
                          options.proj_size > 0 ? p.back() : Tensor()};
      std::vector<Tensor> init;
      for (const Tensor& s : initial) init.push_back(s.select(0, layer * directions() + direction));
      const Tensor projected = linear(x, p[0], b_ih);
      const bool reverse = direction == 1;
      ScanResult r;
      if (current_tracing_hooks() != nullptr) {
        const RecurrentMode m = mode;
        r = scan(
            [m, &w](const std::vector<Tensor>& carry, const std::vector<Tensor>& xs) {
              std::vector<Tensor> next = cell_step(m, xs[0], carry, w);
              std::vector<Tensor> y{next[0]};
              return std::pair{std::move(next), std::move(y)};
            },
            init, {projected}, 0, reverse);
      } else {  // See Note [Stepping through a sequence eagerly].
        const std::vector<Tensor> steps = unbind_steps(projected);
        const size_t length = steps.size();
        std::vector<Tensor> ys(length);
        r.carry = init;
        for (size_t step = 0; step < length; ++step) {
          const size_t i = reverse ? length - 1 - step : step;
          r.carry = cell_step(mode, steps[i], r.carry, w);
          ys[i] = r.carry[0];
        }
        r.ys = {stack(ys, 0)};
      }
      outputs.push_back(std::move(r.ys[0]));
      for (size_t k = 0; k < finals.size(); ++k) finals[k].push_back(std::move(r.carry[k]));
    }
    x = outputs.size() == 1 ? outputs[0] : cat(outputs, -1);
    if (options.dropout > 0 && is_training() && layer + 1 < options.num_layers)
      x = dropout(x, options.dropout, true);
  }
  std::vector<Tensor> result;
  for (std::vector<Tensor>& f : finals) {
    Tensor s = stack(f, 0);
    result.push_back(batched ? s : s.squeeze(1));
  }
  const Tensor out = !batched ? x.squeeze(1) : options.batch_first ? x.transpose(0, 1) : x;
  return {out, std::move(result)};
}

// ---- RNN, LSTM, GRU ----

RNN::RNN(int64_t input_size, int64_t hidden_size, RNNOptions options)
    : RNNBase("RNN", rnn_mode(options.nonlinearity), input_size, hidden_size, options) {}

Tensor RNN::forward(const Tensor& input) { return std::get<0>(forward(input, Tensor())); }

std::tuple<Tensor, Tensor> RNN::forward(const Tensor& input, const Tensor& hx) {
  auto [out, states] = run(input, {hx});
  return {out, states[0]};
}

LSTM::LSTM(int64_t input_size, int64_t hidden_size, RNNOptions options)
    : RNNBase("LSTM", RecurrentMode::Lstm, input_size, hidden_size, options) {}

Tensor LSTM::forward(const Tensor& input) {
  return std::get<0>(forward(input, std::tuple<Tensor, Tensor>{}));
}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTM::forward(const Tensor& input,
                                                             const std::tuple<Tensor, Tensor>& hx) {
  KILN_CHECK(std::get<0>(hx).defined() == std::get<1>(hx).defined(), ValueError,
             "{}: pass both h0 and c0 or neither (got only {})", describe(*this),
             std::get<0>(hx).defined() ? "h0" : "c0");
  auto [out, states] = run(input, {std::get<0>(hx), std::get<1>(hx)});
  return {out, {states[0], states[1]}};
}

GRU::GRU(int64_t input_size, int64_t hidden_size, RNNOptions options)
    : RNNBase("GRU", RecurrentMode::Gru, input_size, hidden_size, options) {}

Tensor GRU::forward(const Tensor& input) { return std::get<0>(forward(input, Tensor())); }

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& hx) {
  auto [out, states] = run(input, {hx});
  return {out, states[0]};
}

// ---- cells ----

RNNCellBase::RNNCellBase(std::string name, RecurrentMode mode, int64_t input_size,
                         int64_t hidden_size, bool bias)
    : Module(name),
      mode(mode),
      input_size(input_size),
      hidden_size(check_positive(name, "hidden_size", hidden_size)),
      bias(bias),
      weight_ih(register_parameter("weight_ih",
                                   empty({gate_count(mode) * hidden_size,
                                          check_non_negative(name, "input_size", input_size)}))),
      weight_hh(
          register_parameter("weight_hh", empty({gate_count(mode) * hidden_size, hidden_size}))),
      bias_ih(
          register_parameter("bias_ih", bias ? empty({gate_count(mode) * hidden_size}) : Tensor())),
      bias_hh(register_parameter("bias_hh",
                                 bias ? empty({gate_count(mode) * hidden_size}) : Tensor())) {
  reset_parameters();
}

void RNNCellBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  for (Tensor* t : {&weight_ih, &weight_hh, &bias_ih, &bias_hh})
    if (t->defined()) init::uniform_(*t, -bound, bound);
}

std::string RNNCellBase::extra_repr() const {
  std::string s = fmt::format("{}, {}", input_size, hidden_size);
  if (!bias) s += ", bias=False";
  if (mode == RecurrentMode::RnnRelu) s += ", nonlinearity='relu'";
  return s;
}

std::vector<Tensor> RNNCellBase::step(const Tensor& input,
                                      const std::vector<Tensor>& states) const {
  check_input_defined(input);
  KILN_CHECK(input.dim() == 1 || input.dim() == 2, ShapeError,
             "{}: expected an input of shape (N, H_in) or unbatched (H_in), got shape {}",
             describe(*this), shape_str(input.sym_sizes()));
  check_features(*this, input, input_size);
  const bool batched = input.dim() == 2;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const std::vector<SymInt> expected{x.sym_sizes()[0], hidden_size};
  const char* names[] = {"hx", "cx"};
  std::vector<Tensor> s;
  for (size_t k = 0; k < states.size(); ++k) {
    if (!states[k].defined()) {
      s.push_back(zeros(expected, TensorOptions().dtype(input.dtype())));
      continue;
    }
    const SymIntArrayRef shown =
        batched ? SymIntArrayRef(expected) : SymIntArrayRef(expected).slice(1);
    KILN_CHECK(shapes_equal(states[k].sym_sizes(), shown), ShapeError,
               "{}: expected {} of shape {} for an input of shape {}, got {}", describe(*this),
               names[k], shape_str(shown), shape_str(input.sym_sizes()),
               shape_str(states[k].sym_sizes()));
    s.push_back(batched ? states[k] : states[k].unsqueeze(0));
  }
  std::vector<Tensor> next =
      cell_step(mode, linear(x, weight_ih, bias_ih), s, {weight_hh, bias_hh, Tensor()});
  if (!batched)
    for (Tensor& t : next) t = t.squeeze(0);
  return next;
}

RNNCell::RNNCell(int64_t input_size, int64_t hidden_size, bool bias, std::string nonlinearity)
    : RNNCellBase("RNNCell", rnn_mode(nonlinearity), input_size, hidden_size, bias) {}

Tensor RNNCell::forward(const Tensor& input, const Tensor& hx) { return step(input, {hx})[0]; }

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden_size, bool bias)
    : RNNCellBase("LSTMCell", RecurrentMode::Lstm, input_size, hidden_size, bias) {}

std::tuple<Tensor, Tensor> LSTMCell::forward(const Tensor& input,
                                             const std::tuple<Tensor, Tensor>& hx) {
  KILN_CHECK(std::get<0>(hx).defined() == std::get<1>(hx).defined(), ValueError,
             "{}: pass both hx and cx or neither (got only {})", describe(*this),
             std::get<0>(hx).defined() ? "hx" : "cx");
  const std::vector<Tensor> next = step(input, {std::get<0>(hx), std::get<1>(hx)});
  return {next[0], next[1]};
}

GRUCell::GRUCell(int64_t input_size, int64_t hidden_size, bool bias)
    : RNNCellBase("GRUCell", RecurrentMode::Gru, input_size, hidden_size, bias) {}

Tensor GRUCell::forward(const Tensor& input, const Tensor& hx) { return step(input, {hx})[0]; }

}  // namespace kiln::nn
