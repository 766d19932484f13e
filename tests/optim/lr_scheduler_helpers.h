// Shared by the LR scheduler tests: test-only optimizers, the scheduler configurations of
// tests/data/lr_schedules*.json (by the case names the generator uses), running them, and reading
// the reference sequences.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/optim/lr_scheduler.h"
#include "kiln/optim/optimizer.h"

namespace kiln::optim::lr_test {

// A plain SGD step, with a "momentum" option for the schedulers to cycle (the step ignores it):
// the scheduler tests need an Optimizer, not a particular update rule.
class PlainSGD : public Optimizer {
 public:
  PlainSGD(std::vector<ParamGroup> groups, double lr, double momentum = 0.9)
      : Optimizer(std::move(groups), lr, {{"momentum", momentum}, {"weight_decay", 0.0}}) {}
  void step() override;
  std::string name() const override { return "PlainSGD"; }
};

// The same step, with Adam's "beta1"/"beta2" options instead of "momentum".
class PlainAdam : public Optimizer {
 public:
  PlainAdam(std::vector<ParamGroup> groups, double lr)
      : Optimizer(std::move(groups), lr, {{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}}) {}
  void step() override;
  std::string name() const override { return "PlainAdam"; }
};

// 0.1 * (i + 1) for group i, the reference data's setup.
std::vector<double> default_lrs(size_t groups);
// One group per rate, each with one parameter that has a gradient.
std::unique_ptr<Optimizer> make_sgd(const std::vector<double>& lrs);
std::unique_ptr<Optimizer> make_adam(const std::vector<double>& lrs);

// A scheduler configuration on its own optimizer, stepped like the generator steps it.
struct Schedule {
  std::unique_ptr<Optimizer> optimizer;
  std::function<void(size_t iteration)> step;  // the scheduler step after iteration's update
  std::function<StateDict()> state_dict;
  std::function<void(const StateDict&)> load_state_dict;
  std::shared_ptr<void> schedulers;  // keeps them alive
};
// metrics: ReduceLROnPlateau's metric per iteration (empty for the others).
using ScheduleFactory = std::function<Schedule(const std::vector<double>& metrics)>;
// Every case of tests/data/lr_schedules.json and lr_schedules_extra.json, by name.
const std::map<std::string, ScheduleFactory>& schedule_cases();

// Per iteration, per group.
using Sequence = std::vector<std::vector<double>>;
struct Recorded {
  Sequence lr, momentum, beta1;  // momentum/beta1: recorded where the groups have the option
};
// Records iterations [begin, end): each group's rates, then optimizer step, then scheduler step.
void run(Schedule& schedule, size_t begin, size_t end, Recorded& out);

struct ReferenceCase {
  std::string name;
  Recorded expected;  // lr always; momentum/beta1 where the case cycles them
  std::vector<double> metrics;
};
// The cases of tests/data/<file>.
std::vector<ReferenceCase> load_reference(const std::string& file);

// EXPECTs |got - expected| <= rel_tol * |expected| element by element (a tiny absolute floor for
// expected zeros); `what` names the sequence in failures.
void expect_sequence_near(const Sequence& got, const Sequence& expected, double rel_tol,
                          const std::string& what);

}  // namespace kiln::optim::lr_test
