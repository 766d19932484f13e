// The gradient check of the op harness: for every differentiable op in the table, analytic
// gradients (the derivative table run by the autograd engine) against central finite differences
// in float64, on the op's samples (broadcast and non-contiguous inputs included), and the same for
// second derivatives (double backward) where the op's formula supports it.
//
// What is checked is the vector-Jacobian product of L(x) = sum_k <out_k(x), w_k> for random
// cotangents w_k: dL/dx_j analytically (kiln::grad) vs (L(x + eps e_j) - L(x - eps e_j)) / 2eps.
// Double backward differentiates F(x) = sum_j <dL/dx_j(x), v_j> the same way.
#include <gtest/gtest.h>

#include "src/autograd/derivatives.h"
#include "src/core/shape.h"
#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

constexpr double kEps = 1e-6;
constexpr int64_t kMaxElements = 80;  // finite differences cost two op calls per element

bool is_differentiable(const OpDef& op) {
  return !op.has_tag(kTagNondifferentiable) && !op.has_tag(kTagFactory) &&
         op.dtypes.contains(kFloat64);
}

const char* gradcheck_exemption(std::string_view name) {
  for (const auto& [op, reason] : gradcheck_exemptions())
    if (op == name) return reason.c_str();
  return nullptr;
}

// Where the differentiable inputs of a sample are: (arg index, list element or -1).
struct InputSlot {
  size_t arg;
  int element;
};

std::vector<InputSlot> differentiable_slots(const Stack& args) {
  std::vector<InputSlot> slots;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_tensor()) {
      const Tensor& t = args[i].tensor();
      if (t.defined() && t.is_floating_point()) slots.push_back({i, -1});
    } else if (args[i].is_tensor_list()) {
      const auto& list = args[i].tensor_list();
      for (size_t j = 0; j < list.size(); ++j)
        if (list[j].defined() && list[j].is_floating_point())
          slots.push_back({i, static_cast<int>(j)});
    }
  }
  return slots;
}

Tensor get_slot(const Stack& args, const InputSlot& s) {
  return s.element < 0 ? args[s.arg].tensor() : args[s.arg].tensor_list()[s.element];
}

void set_slot(Stack& args, const InputSlot& s, Tensor t) {
  if (s.element < 0) {
    args[s.arg] = std::move(t);
  } else {
    std::vector<Tensor> list = args[s.arg].tensor_list();
    list[s.element] = std::move(t);
    args[s.arg] = std::move(list);
  }
}

// An expanded input (stride 0) has several elements sharing one memory location: as a leaf its
// elements are independent variables, which finite differences on the shared memory can't mirror.
Tensor without_expanded_dims(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0 && t.size(d) > 1) return t.contiguous();
  return t;
}

// The op's outputs as one list: a Tensor[] output (split, chunk) contributes each element.
std::vector<Tensor> flat_outputs(const Stack& outs) {
  std::vector<Tensor> flat;
  for (const IValue& v : outs) {
    if (v.is_tensor_list()) {
      for (const Tensor& t : v.tensor_list()) flat.push_back(t);
    } else {
      flat.push_back(v.tensor());
    }
  }
  return flat;
}

class GradChecker {
 public:
  GradChecker(const OpDef& op, const Stack& sample, std::mt19937_64& rng)
      : op_(op), args_(sample), slots_(differentiable_slots(sample)) {
    for (const InputSlot& s : slots_) set_slot(args_, s, without_expanded_dims(get_slot(args_, s)));
    // Cotangents: one per floating output, from a plain (untracked) run.
    Stack plain = args_;
    if (op_.has_tag(kTagInplace)) plain[0] = plain[0].tensor().clone();
    for (const Tensor& out : flat_outputs(dispatch::call(op_.id, plain))) {
      cotangents_.push_back(out.is_floating_point() ? make_tensor(out.sizes(), kFloat64, rng, -1, 1)
                                                    : Tensor());
    }
  }

  size_t num_inputs() const { return slots_.size(); }
  // Samples with inf/NaN inputs check special-value handling in the value harness; derivatives
  // there are not finite-difference material.
  bool all_finite() const {
    for (const InputSlot& s : slots_) {
      const Tensor t = get_slot(args_, s);
      if (t.numel() > 0 && !t.isfinite().all().item<bool>()) return false;
    }
    return true;
  }
  int64_t total_elements() const {
    int64_t n = 0;
    for (const InputSlot& s : slots_) n += get_slot(args_, s).numel();
    return n;
  }

  // L(x) with `inputs` in the differentiable slots; tracked when the inputs require grad.
  Tensor loss(const std::vector<Tensor>& inputs) const {
    Stack args = args_;
    for (size_t i = 0; i < slots_.size(); ++i) set_slot(args, slots_[i], inputs[i]);
    if (op_.has_tag(kTagInplace)) args[0] = args[0].tensor().clone();
    const std::vector<Tensor> outs = flat_outputs(dispatch::call(op_.id, args));
    Tensor total = zeros({}, kFloat64);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!cotangents_[k].defined()) continue;
      total = total + (outs[k].to(kFloat64) * cotangents_[k]).sum();
    }
    return total;
  }

  std::vector<Tensor> leaves() const {
    std::vector<Tensor> out;
    for (const InputSlot& s : slots_) out.push_back(get_slot(args_, s).detach().requires_grad_());
    return out;
  }

  // First-order analytic gradients at `inputs` (leaves); zeros where unused.
  std::vector<Tensor> analytic(const std::vector<Tensor>& inputs, bool create_graph) const {
    Tensor l = loss(inputs);
    if (!l.requires_grad()) return zeros_like_all(inputs);
    std::vector<Tensor> g =
        grad({l}, inputs, {}, std::nullopt, create_graph, /*allow_unused=*/true);
    for (size_t i = 0; i < g.size(); ++i)
      if (!g[i].defined()) g[i] = zeros_like(inputs[i]);
    return g;
  }

  // d(scalar_fn)/d inputs by central differences.
  template <typename Fn>
  std::vector<Tensor> numeric(const std::vector<Tensor>& inputs, Fn scalar_fn) const {
    std::vector<Tensor> result;
    std::vector<Tensor> point;
    for (const Tensor& t : inputs) point.push_back(t.detach().clone());
    for (size_t i = 0; i < point.size(); ++i) {
      Tensor g = zeros(point[i].sizes(), kFloat64);
      double* gd = g.data_ptr<double>();
      for (int64_t e = 0; e < point[i].numel(); ++e) {
        double* x = point[i].data_ptr<double>() + e;
        const double saved = *x;
        *x = saved + kEps;
        const double plus = scalar_fn(point);
        *x = saved - kEps;
        const double minus = scalar_fn(point);
        *x = saved;
        gd[e] = (plus - minus) / (2 * kEps);
      }
      result.push_back(g);
    }
    return result;
  }

  std::vector<Tensor> zeros_like_all(const std::vector<Tensor>& inputs) const {
    std::vector<Tensor> z;
    for (const Tensor& t : inputs) z.push_back(zeros(t.sizes(), kFloat64));
    return z;
  }

 private:
  const OpDef& op_;
  Stack args_;
  std::vector<InputSlot> slots_;
  std::vector<Tensor> cotangents_;
};

std::string compare_grads(const std::vector<Tensor>& analytic, const std::vector<Tensor>& numeric,
                          double atol, double rtol) {
  for (size_t i = 0; i < analytic.size(); ++i) {
    std::string diff = compare_tensors(analytic[i].detach().contiguous(), numeric[i], atol, rtol);
    if (!diff.empty()) return fmt::format("input {}: {}", i, diff);
  }
  return "";
}

class GradCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(GradCheck, AnalyticMatchesFiniteDifferences) {
  const std::string& name = GetParam();
  const OpDef& op = OpRegistry::instance().get(op_id(name));
  if (!is_differentiable(op)) GTEST_SKIP() << name << " is not differentiable";
  if (const char* reason = gradcheck_exemption(name)) GTEST_SKIP() << reason;
  ASSERT_TRUE(op.has_derivative || op.composite != nullptr)
      << name
      << ": differentiable op with no formula in the derivative table (src/autograd/formulas)";
  const OpInfo* info = find_op_info(name);
  ASSERT_NE(info, nullptr) << name << " has no OpInfo";
  std::mt19937_64 rng(std::hash<std::string>{}(name) ^ 0x9e37);
  std::vector<SampleInput> samples =
      info->grad_samples ? info->grad_samples(rng) : info->samples(kFloat64, rng);
  const autograd::DerivativeDef* def = autograd::find_derivative(op.id);
  const bool check_double = def == nullptr || def->double_backward;
  int checked = 0;
  for (const SampleInput& sample : samples) {
    GradChecker checker(op, sample.args, rng);
    if (checker.num_inputs() == 0 || checker.total_elements() > kMaxElements ||
        !checker.all_finite())
      continue;
    SCOPED_TRACE(fmt::format("op {} sample {}", name, sample.description));
    std::vector<Tensor> leaves = checker.leaves();
    std::vector<Tensor> analytic = checker.analytic(leaves, /*create_graph=*/check_double);
    std::vector<Tensor> numeric = checker.numeric(leaves, [&](const std::vector<Tensor>& x) {
      NoGradGuard no_grad;
      return checker.loss(x).item<double>();
    });
    EXPECT_EQ(compare_grads(analytic, numeric, info->grad_atol, info->grad_rtol), "")
        << "first derivative";
    if (check_double) {
      // F(x) = sum_i <dL/dx_i, v_i>
      std::vector<Tensor> v;
      for (const Tensor& l : leaves) v.push_back(make_tensor(l.sizes(), kFloat64, rng, -1, 1));
      auto second = [&](const std::vector<Tensor>& grads) {
        Tensor f = zeros({}, kFloat64);
        for (size_t i = 0; i < grads.size(); ++i) f = f + (grads[i] * v[i]).sum();
        return f;
      };
      Tensor f = second(analytic);
      std::vector<Tensor> analytic2 = checker.zeros_like_all(leaves);
      if (f.requires_grad()) {
        analytic2 = grad({f}, leaves, {}, std::nullopt, false, /*allow_unused=*/true);
        for (size_t i = 0; i < analytic2.size(); ++i)
          if (!analytic2[i].defined()) analytic2[i] = zeros(leaves[i].sizes(), kFloat64);
      }
      std::vector<Tensor> numeric2 = checker.numeric(leaves, [&](const std::vector<Tensor>& x) {
        std::vector<Tensor> at;
        for (const Tensor& t : x) at.push_back(t.detach().clone().requires_grad_());
        NoGradGuard no_grad;
        std::vector<Tensor> g;
        {
          EnableGradGuard enable;
          g = checker.analytic(at, false);
        }
        return second(g).item<double>();
      });
      EXPECT_EQ(compare_grads(analytic2, numeric2, info->grad_atol * 10, info->grad_rtol * 10), "")
          << "second derivative (double backward)";
    }
    ++checked;
  }
  EXPECT_GT(checked, 0) << name << ": no sample small enough for the gradient check (at most "
                        << kMaxElements << " input elements); give the OpInfo grad_samples";
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const auto& op : OpRegistry::instance().ops()) names.push_back(op->name);
  return names;
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllOps, GradCheck, ::testing::ValuesIn(op_names()), param_name);

}  // namespace
}  // namespace kiln::testing
