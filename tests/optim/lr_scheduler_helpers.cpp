#include "tests/optim/lr_scheduler_helpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

namespace kiln::optim::lr_test {

namespace {

void plain_step(std::vector<ParamGroup>& groups, const std::function<double(ParamGroup&)>& lr) {
  NoGradGuard no_grad;
  for (ParamGroup& group : groups) {
    const double rate = lr(group);
    for (Tensor& p : group.params)
      if (p.grad().defined()) p.sub_(p.grad(), rate);
  }
}

std::vector<ParamGroup> make_groups(const std::vector<double>& lrs) {
  std::vector<ParamGroup> groups;
  for (double lr : lrs) {
    Tensor p = zeros({2});
    p.requires_grad_();
    p.mutable_grad() = ones({2});
    groups.push_back(ParamGroup{.params = {p}, .lr = lr});
  }
  return groups;
}

// The metric list of lr_schedules.json's ReduceLROnPlateau case (its README gives it).
const std::vector<double> kReferenceMetrics = {1.0,  0.9,  0.95, 0.96, 0.97, 0.8,
                                               0.85, 0.86, 0.87, 0.88, 0.89, 0.9};

using Build = std::function<std::shared_ptr<LRScheduler>(Optimizer&)>;

Schedule with(std::unique_ptr<Optimizer> optimizer, const Build& build) {
  Schedule s;
  s.optimizer = std::move(optimizer);
  std::shared_ptr<LRScheduler> scheduler = build(*s.optimizer);
  s.step = [scheduler](size_t) { scheduler->step(); };
  s.state_dict = [scheduler] { return scheduler->state_dict(); };
  s.load_state_dict = [scheduler](const StateDict& d) { scheduler->load_state_dict(d); };
  s.schedulers = scheduler;
  return s;
}

ScheduleFactory sgd(size_t groups, Build build) {
  return [=](const std::vector<double>&) { return with(make_sgd(default_lrs(groups)), build); };
}

ScheduleFactory sgd_lrs(std::vector<double> lrs, Build build) {
  return [=](const std::vector<double>&) { return with(make_sgd(lrs), build); };
}

ScheduleFactory plateau(size_t groups, ReduceLROnPlateauOptions options) {
  return [=](const std::vector<double>& metrics) {
    Schedule s;
    s.optimizer = make_sgd(default_lrs(groups));
    auto scheduler = std::make_shared<ReduceLROnPlateau>(*s.optimizer, options);
    s.step = [scheduler, metrics](size_t i) { scheduler->step(metrics.at(i)); };
    s.state_dict = [scheduler] { return scheduler->state_dict(); };
    s.load_state_dict = [scheduler](const StateDict& d) { scheduler->load_state_dict(d); };
    s.schedulers = scheduler;
    return s;
  };
}

// CosineAnnealingWarmRestarts stepped with step() (nullopt) or step(epoch).
ScheduleFactory warm_restarts_calls(int64_t t_0, int64_t t_mult,
                                    std::vector<std::optional<double>> calls) {
  return [=](const std::vector<double>&) {
    Schedule s;
    s.optimizer = make_sgd(default_lrs(2));
    auto scheduler = std::make_shared<CosineAnnealingWarmRestarts>(*s.optimizer, t_0, t_mult, 0.0);
    s.step = [scheduler, calls](size_t i) {
      if (calls.at(i)) {
        scheduler->step(*calls.at(i));
      } else {
        scheduler->step();
      }
    };
    s.state_dict = [scheduler] { return scheduler->state_dict(); };
    s.load_state_dict = [scheduler](const StateDict& d) { scheduler->load_state_dict(d); };
    s.schedulers = scheduler;
    return s;
  };
}

template <typename S, typename... Args>
std::shared_ptr<LRScheduler> make(Optimizer& o, Args&&... args) {
  return std::make_shared<S>(o, std::forward<Args>(args)...);
}

std::map<std::string, ScheduleFactory> build_cases() {
  std::map<std::string, ScheduleFactory> c;
  // ---- tests/data/lr_schedules.json (one group, lr 0.1) ----
  c["StepLR(step_size=3,gamma=0.5)"] = sgd(1, [](Optimizer& o) { return make<StepLR>(o, 3, 0.5); });
  c["MultiStepLR(milestones=[2,5,9],gamma=0.1)"] = sgd(1, [](Optimizer& o) {
    return make<MultiStepLR>(o, std::vector<int64_t>{2, 5, 9}, 0.1);
  });
  c["ConstantLR(factor=0.25,total_iters=4)"] =
      sgd(1, [](Optimizer& o) { return make<ConstantLR>(o, 0.25, 4); });
  c["LinearLR(start_factor=0.1,end_factor=1.0,total_iters=5)"] =
      sgd(1, [](Optimizer& o) { return make<LinearLR>(o, 0.1, 1.0, 5); });
  c["ExponentialLR(gamma=0.9)"] = sgd(1, [](Optimizer& o) { return make<ExponentialLR>(o, 0.9); });
  c["PolynomialLR(total_iters=6,power=2.0)"] =
      sgd(1, [](Optimizer& o) { return make<PolynomialLR>(o, 6, 2.0); });
  c["CosineAnnealingLR(T_max=5,eta_min=0.01)"] =
      sgd(1, [](Optimizer& o) { return make<CosineAnnealingLR>(o, 5, 0.01); });
  c["CosineAnnealingWarmRestarts(T_0=3,T_mult=2,eta_min=0.001)"] =
      sgd(1, [](Optimizer& o) { return make<CosineAnnealingWarmRestarts>(o, 3, 2, 0.001); });
  c["CyclicLR(base_lr=0.01,max_lr=0.1,step_size_up=4,mode=triangular)"] = sgd(1, [](Optimizer& o) {
    return make<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 4});
  });
  c["OneCycleLR(max_lr=0.5,total_steps=20)"] = sgd(1, [](Optimizer& o) {
    return make<OneCycleLR>(o, OneCycleLROptions{.max_lr = 0.5, .total_steps = 20});
  });
  c["LambdaLR(lambda e: 0.95**e)"] = sgd(1, [](Optimizer& o) {
    return make<LambdaLR>(o, LrLambda([](int64_t e) { return std::pow(0.95, e); }));
  });
  c["MultiplicativeLR(lambda e: 0.9)"] = sgd(1, [](Optimizer& o) {
    return make<MultiplicativeLR>(o, LrLambda([](int64_t) { return 0.9; }));
  });
  c["SequentialLR([ConstantLR(0.1,20),ExponentialLR(0.9)],milestones=[20]) base 0.05"] =
      sgd_lrs({0.05}, [](Optimizer& o) {
        auto warmup = std::make_shared<ConstantLR>(o, 0.1, 20);
        auto decay = std::make_shared<ExponentialLR>(o, 0.9);
        return make<SequentialLR>(o, std::vector<std::shared_ptr<LRScheduler>>{warmup, decay},
                                  std::vector<int64_t>{20});
      });
  c["ChainedScheduler([ConstantLR(0.1,4),ExponentialLR(0.9)])"] = sgd(1, [](Optimizer& o) {
    return std::make_shared<ChainedScheduler>(std::vector<std::shared_ptr<LRScheduler>>{
        make<ConstantLR>(o, 0.1, 4), make<ExponentialLR>(o, 0.9)});
  });
  c["ReduceLROnPlateau(mode=min,factor=0.5,patience=2)"] =
      plateau(1, {.mode = "min", .factor = 0.5, .patience = 2});

  // ---- tests/data/lr_schedules_extra.json (tests/data/gen_lr_schedules.py) ----
  c["LambdaLR(per-group: 0.95**e, 1/(e+1)) groups=2"] = sgd(2, [](Optimizer& o) {
    return make<LambdaLR>(
        o, std::vector<LrLambda>{[](int64_t e) { return std::pow(0.95, e); },
                                 [](int64_t e) { return 1.0 / static_cast<double>(e + 1); }});
  });
  c["MultiplicativeLR(per-group: 0.9, 0.5 if e%3==0 else 1) groups=2"] = sgd(2, [](Optimizer& o) {
    return make<MultiplicativeLR>(
        o, std::vector<LrLambda>{[](int64_t) { return 0.9; },
                                 [](int64_t e) { return e % 3 == 0 ? 0.5 : 1.0; }});
  });
  c["StepLR(step_size=2,gamma=0.3) groups=3"] =
      sgd(3, [](Optimizer& o) { return make<StepLR>(o, 2, 0.3); });
  c["MultiStepLR(milestones=[1,3,3,6],gamma=0.5) groups=2"] = sgd(2, [](Optimizer& o) {
    return make<MultiStepLR>(o, std::vector<int64_t>{1, 3, 3, 6}, 0.5);
  });
  c["ConstantLR(factor=0.5,total_iters=3) groups=2"] =
      sgd(2, [](Optimizer& o) { return make<ConstantLR>(o, 0.5, 3); });
  c["LinearLR(default) groups=2"] = sgd(2, [](Optimizer& o) { return make<LinearLR>(o); });
  c["LinearLR(start_factor=1.0,end_factor=0.2,total_iters=4) groups=2"] =
      sgd(2, [](Optimizer& o) { return make<LinearLR>(o, 1.0, 0.2, 4); });
  c["ExponentialLR(gamma=0.8) groups=2"] =
      sgd(2, [](Optimizer& o) { return make<ExponentialLR>(o, 0.8); });
  c["PolynomialLR(total_iters=4,power=1.0) groups=2"] =
      sgd(2, [](Optimizer& o) { return make<PolynomialLR>(o, 4, 1.0); });
  c["PolynomialLR(total_iters=5,power=0.5) groups=2"] =
      sgd(2, [](Optimizer& o) { return make<PolynomialLR>(o, 5, 0.5); });
  c["CosineAnnealingLR(T_max=4,eta_min=0) groups=2"] =
      sgd(2, [](Optimizer& o) { return make<CosineAnnealingLR>(o, 4, 0.0); });
  c["CosineAnnealingWarmRestarts(T_0=3,T_mult=1,eta_min=0) groups=2"] =
      sgd(2, [](Optimizer& o) { return make<CosineAnnealingWarmRestarts>(o, 3, 1, 0.0); });
  c["CosineAnnealingWarmRestarts(T_0=2,T_mult=2,eta_min=0.01) groups=2"] =
      sgd(2, [](Optimizer& o) { return make<CosineAnnealingWarmRestarts>(o, 2, 2, 0.01); });
  {
    std::vector<std::optional<double>> calls;
    for (int e = 0; e < 6; ++e)
      for (int i = 0; i < 4; ++i) calls.push_back(e + (i + 1) / 4.0);
    c["CosineAnnealingWarmRestarts(T_0=2,T_mult=2) step(epoch + i/4) groups=2"] =
        warm_restarts_calls(2, 2, calls);
  }
  {
    std::vector<std::optional<double>> calls(5, std::nullopt);
    calls.push_back(9.5);
    calls.insert(calls.end(), 4, std::nullopt);
    c["CosineAnnealingWarmRestarts(T_0=3,T_mult=2) step()x5, step(9.5), step()x4 groups=2"] =
        warm_restarts_calls(3, 2, calls);
  }
  c["CyclicLR(triangular2,base=[0.01,0.02],max=[0.1,0.2],up=2,down=3,momentum 0.8-0.9) groups=2"] =
      sgd(2, [](Optimizer& o) {
        return make<CyclicLR>(o, CyclicLROptions{.base_lr = {0.01, 0.02},
                                                 .max_lr = {0.1, 0.2},
                                                 .step_size_up = 2,
                                                 .step_size_down = 3,
                                                 .mode = "triangular2",
                                                 .base_momentum = 0.8,
                                                 .max_momentum = 0.9});
      });
  c["CyclicLR(exp_range,gamma=0.9,base=0.01,max=0.1,up=3,momentum [0.85,0.8]-[0.95,0.9]) "
    "groups=2"] = sgd(2, [](Optimizer& o) {
    return make<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01,
                                             .max_lr = 0.1,
                                             .step_size_up = 3,
                                             .mode = "exp_range",
                                             .gamma = 0.9,
                                             .base_momentum = {0.85, 0.8},
                                             .max_momentum = {0.95, 0.9}});
  });
  c["CyclicLR(scale_fn=0.5**x,scale_mode=cycle,base=0.01,max=0.1,up=2,no momentum) groups=2"] =
      sgd(2, [](Optimizer& o) {
        return make<CyclicLR>(o,
                              CyclicLROptions{.base_lr = 0.01,
                                              .max_lr = 0.1,
                                              .step_size_up = 2,
                                              .scale_fn = [](double x) { return std::pow(0.5, x); },
                                              .scale_mode = "cycle",
                                              .cycle_momentum = false});
      });
  c["CyclicLR(scale_fn=1/(1+0.1x),scale_mode=iterations,base=0.01,max=0.1,up=2,no momentum) "
    "groups=2"] = sgd(2, [](Optimizer& o) {
    return make<CyclicLR>(
        o, CyclicLROptions{.base_lr = 0.01,
                           .max_lr = 0.1,
                           .step_size_up = 2,
                           .scale_fn = [](double x) { return 1.0 / (1.0 + 0.1 * x); },
                           .scale_mode = "iterations",
                           .cycle_momentum = false});
  });
  c["CyclicLR(triangular,base=0.01,max=0.1,up=3,Adam beta1 0.8-0.9) groups=2"] =
      [](const std::vector<double>&) {
        return with(make_adam(default_lrs(2)), [](Optimizer& o) {
          return make<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01,
                                                   .max_lr = 0.1,
                                                   .step_size_up = 3,
                                                   .base_momentum = 0.8,
                                                   .max_momentum = 0.9});
        });
      };
  c["OneCycleLR(max_lr=[0.5,1.0],total_steps=15,cos,momentum) groups=2"] = sgd(2, [](Optimizer& o) {
    return make<OneCycleLR>(o, OneCycleLROptions{.max_lr = {0.5, 1.0}, .total_steps = 15});
  });
  c["OneCycleLR(max_lr=0.4,epochs=3,steps_per_epoch=5,pct_start=0.4,linear,div=10,final_div=100,"
    "momentum [0.8,0.7]-[0.9,0.95]) groups=2"] = sgd(2, [](Optimizer& o) {
    return make<OneCycleLR>(o, OneCycleLROptions{.max_lr = 0.4,
                                                 .epochs = 3,
                                                 .steps_per_epoch = 5,
                                                 .pct_start = 0.4,
                                                 .anneal_strategy = "linear",
                                                 .base_momentum = {0.8, 0.7},
                                                 .max_momentum = {0.9, 0.95},
                                                 .div_factor = 10.0,
                                                 .final_div_factor = 100.0});
  });
  c["OneCycleLR(max_lr=0.5,total_steps=20,three_phase,cos,momentum) groups=2"] =
      sgd(2, [](Optimizer& o) {
        return make<OneCycleLR>(
            o, OneCycleLROptions{.max_lr = 0.5, .total_steps = 20, .three_phase = true});
      });
  c["OneCycleLR(max_lr=[0.01,0.02],total_steps=16,three_phase,linear,Adam beta1) groups=2"] =
      [](const std::vector<double>&) {
        return with(make_adam(default_lrs(2)), [](Optimizer& o) {
          return make<OneCycleLR>(o, OneCycleLROptions{.max_lr = {0.01, 0.02},
                                                       .total_steps = 16,
                                                       .anneal_strategy = "linear",
                                                       .three_phase = true});
        });
      };
  c["OneCycleLR(max_lr=0.3,total_steps=10,pct_start=0.25,no momentum) groups=2"] =
      sgd(2, [](Optimizer& o) {
        return make<OneCycleLR>(
            o, OneCycleLROptions{
                   .max_lr = 0.3, .total_steps = 10, .pct_start = 0.25, .cycle_momentum = false});
      });
  c["ReduceLROnPlateau(mode=max,factor=0.5,patience=1) groups=2"] =
      plateau(2, {.mode = "max", .factor = 0.5, .patience = 1});
  c["ReduceLROnPlateau(mode=min,threshold=0.05,threshold_mode=abs,factor=0.5,patience=0,"
    "cooldown=2,min_lr=[0.02,0.05]) groups=2"] = plateau(2, {.mode = "min",
                                                             .factor = 0.5,
                                                             .patience = 0,
                                                             .threshold = 0.05,
                                                             .threshold_mode = "abs",
                                                             .cooldown = 2,
                                                             .min_lr = {0.02, 0.05}});
  c["ReduceLROnPlateau(mode=max,threshold=0.02,threshold_mode=abs,factor=0.1,patience=2) "
    "groups=3"] = plateau(3, {.mode = "max",
                              .factor = 0.1,
                              .patience = 2,
                              .threshold = 0.02,
                              .threshold_mode = "abs"});
  c["ReduceLROnPlateau(mode=min,factor=0.5,patience=0,min_lr=0.03,eps=0.02) groups=2"] =
      plateau(2, {.mode = "min", .factor = 0.5, .patience = 0, .min_lr = 0.03, .eps = 0.02});
  c["SequentialLR([ConstantLR(0.1,20),ExponentialLR(0.9)],milestones=[20]) base=[0.05,0.1]"] =
      sgd_lrs({0.05, 0.1}, [](Optimizer& o) {
        return make<SequentialLR>(o,
                                  std::vector<std::shared_ptr<LRScheduler>>{
                                      make<ConstantLR>(o, 0.1, 20), make<ExponentialLR>(o, 0.9)},
                                  std::vector<int64_t>{20});
      });
  c["SequentialLR([LinearLR(0.1,1,3),CosineAnnealingLR(T_max=4),StepLR(2,0.5)],milestones=[3,8])"
    " groups=2"] = sgd(2, [](Optimizer& o) {
    return make<SequentialLR>(
        o,
        std::vector<std::shared_ptr<LRScheduler>>{
            make<LinearLR>(o, 0.1, 1.0, 3), make<CosineAnnealingLR>(o, 4), make<StepLR>(o, 2, 0.5)},
        std::vector<int64_t>{3, 8});
  });
  c["ChainedScheduler([ConstantLR(0.1,4),ExponentialLR(0.9)]) groups=2"] = sgd(2, [](Optimizer& o) {
    return std::make_shared<ChainedScheduler>(std::vector<std::shared_ptr<LRScheduler>>{
        make<ConstantLR>(o, 0.1, 4), make<ExponentialLR>(o, 0.9)});
  });
  c["ChainedScheduler([LinearLR(0.5,1,4),CosineAnnealingLR(T_max=6,eta_min=0.001),"
    "MultiStepLR([2,5],0.5)]) groups=2"] = sgd(2, [](Optimizer& o) {
    return std::make_shared<ChainedScheduler>(std::vector<std::shared_ptr<LRScheduler>>{
        make<LinearLR>(o, 0.5, 1.0, 4), make<CosineAnnealingLR>(o, 6, 0.001),
        make<MultiStepLR>(o, std::vector<int64_t>{2, 5}, 0.5)});
  });
  c["StepLR(2,0.5) and ExponentialLR(0.9) both stepped, no ChainedScheduler groups=2"] =
      [](const std::vector<double>&) {
        Schedule s;
        s.optimizer = make_sgd(default_lrs(2));
        auto step_lr = std::make_shared<StepLR>(*s.optimizer, 2, 0.5);
        auto exponential = std::make_shared<ExponentialLR>(*s.optimizer, 0.9);
        s.step = [=](size_t) {
          step_lr->step();
          exponential->step();
        };
        // Both states in one dict, under "a." and "b.".
        s.state_dict = [=] {
          StateDict out;
          for (auto& [k, v] : step_lr->state_dict().values) out.values["a." + k] = v;
          for (auto& [k, v] : exponential->state_dict().values) out.values["b." + k] = v;
          return out;
        };
        s.load_state_dict = [=](const StateDict& d) {
          StateDict a, b;
          for (auto& [k, v] : d.values) (k[0] == 'a' ? a : b).values[k.substr(2)] = v;
          step_lr->load_state_dict(a);
          exponential->load_state_dict(b);
        };
        s.schedulers =
            std::make_shared<std::pair<std::shared_ptr<StepLR>, std::shared_ptr<ExponentialLR>>>(
                step_lr, exponential);
        return s;
      };
  return c;
}

}  // namespace

void PlainSGD::step() {
  plain_step(groups_, [this](ParamGroup& g) { return step_lr(g); });
}

void PlainAdam::step() {
  plain_step(groups_, [this](ParamGroup& g) { return step_lr(g); });
}

std::vector<double> default_lrs(size_t groups) {
  std::vector<double> lrs;
  for (size_t i = 0; i < groups; ++i) lrs.push_back(0.1 * static_cast<double>(i + 1));
  return lrs;
}

std::unique_ptr<Optimizer> make_sgd(const std::vector<double>& lrs) {
  return std::make_unique<PlainSGD>(make_groups(lrs), lrs.front());
}

std::unique_ptr<Optimizer> make_adam(const std::vector<double>& lrs) {
  return std::make_unique<PlainAdam>(make_groups(lrs), lrs.front());
}

const std::map<std::string, ScheduleFactory>& schedule_cases() {
  static const std::map<std::string, ScheduleFactory> cases = build_cases();
  return cases;
}

void run(Schedule& schedule, size_t begin, size_t end, Recorded& out) {
  for (size_t i = begin; i < end; ++i) {
    std::vector<double> lr, momentum, beta1;
    for (const ParamGroup& g : schedule.optimizer->param_groups()) {
      lr.push_back(g.lr);
      if (g.has("momentum")) momentum.push_back(g.option("momentum"));
      if (g.has("beta1")) beta1.push_back(g.option("beta1"));
    }
    out.lr.push_back(lr);
    if (!momentum.empty()) out.momentum.push_back(momentum);
    if (!beta1.empty()) out.beta1.push_back(beta1);
    schedule.optimizer->step();
    schedule.step(i);
  }
}

namespace {

Sequence to_sequence(const nlohmann::json& rows) {
  Sequence out;
  for (const auto& row : rows) out.push_back(row.get<std::vector<double>>());
  return out;
}

}  // namespace

std::vector<ReferenceCase> load_reference(const std::string& file) {
  const std::string path = std::string(KILN_TEST_DATA_DIR) + "/" + file;
  std::ifstream in(path);
  if (!in) ADD_FAILURE() << "cannot open " << path;
  nlohmann::json json = nlohmann::json::parse(in);
  std::vector<ReferenceCase> cases;
  for (const auto& [name, value] : json.at("cases").items()) {
    ReferenceCase c;
    c.name = name;
    if (value.is_array()) {  // lr_schedules.json: the lr rows only
      c.expected.lr = to_sequence(value);
      if (name.rfind("ReduceLROnPlateau", 0) == 0) c.metrics = kReferenceMetrics;
    } else {
      c.expected.lr = to_sequence(value.at("lr"));
      if (value.contains("momentum")) c.expected.momentum = to_sequence(value.at("momentum"));
      if (value.contains("beta1")) c.expected.beta1 = to_sequence(value.at("beta1"));
      if (value.contains("metrics")) c.metrics = value.at("metrics").get<std::vector<double>>();
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

void expect_sequence_near(const Sequence& got, const Sequence& expected, double rel_tol,
                          const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what << ": number of steps";
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), expected[i].size()) << what << ": number of groups at step " << i;
    for (size_t g = 0; g < got[i].size(); ++g) {
      const double tol = rel_tol * std::abs(expected[i][g]) + 1e-300;
      EXPECT_LE(std::abs(got[i][g] - expected[i][g]), tol)
          << what << ": step " << i << " group " << g << ": got " << got[i][g] << ", expected "
          << expected[i][g];
    }
  }
}

}  // namespace kiln::optim::lr_test
