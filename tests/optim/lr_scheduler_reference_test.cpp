// Whole learning-rate (and momentum/beta1) sequences of every scheduler configuration against
// PyTorch's: tests/data/lr_schedules.json (the shared reference data) and
// tests/data/lr_schedules_extra.json (tests/data/gen_lr_schedules.py: every mode and option, with
// several parameter groups).
#include <gtest/gtest.h>

#include <set>

#include "tests/optim/lr_scheduler_helpers.h"

namespace kiln::optim::lr_test {
namespace {

constexpr double kRelTol = 1e-12;

void check_file(const std::string& file) {
  std::vector<ReferenceCase> cases = load_reference(file);
  ASSERT_FALSE(cases.empty()) << file;
  for (const ReferenceCase& c : cases) {
    SCOPED_TRACE(file + ": " + c.name);
    auto factory = schedule_cases().find(c.name);
    ASSERT_NE(factory, schedule_cases().end()) << "no C++ configuration for this case";
    Schedule schedule = factory->second(c.metrics);
    Recorded got;
    run(schedule, 0, c.expected.lr.size(), got);
    expect_sequence_near(got.lr, c.expected.lr, kRelTol, "lr");
    if (!c.expected.momentum.empty())
      expect_sequence_near(got.momentum, c.expected.momentum, kRelTol, "momentum");
    if (!c.expected.beta1.empty())
      expect_sequence_near(got.beta1, c.expected.beta1, kRelTol, "beta1");
  }
}

TEST(LRSchedulerReference, SharedReferenceSequencesMatchPyTorch) {
  check_file("lr_schedules.json");
}

TEST(LRSchedulerReference, EveryModeAndOptionMatchesPyTorch) {
  check_file("lr_schedules_extra.json");
}

TEST(LRSchedulerReference, EveryConfigurationHasReferenceData) {
  std::set<std::string> names;
  for (const char* file : {"lr_schedules.json", "lr_schedules_extra.json"})
    for (const ReferenceCase& c : load_reference(file)) names.insert(c.name);
  for (const auto& [name, factory] : schedule_cases())
    EXPECT_TRUE(names.count(name)) << "no reference sequence for " << name;
}

TEST(LRSchedulerReference, ExtraDataCoversEverySchedulerWithSeveralGroups) {
  std::set<std::string> multi_group;
  for (const ReferenceCase& c : load_reference("lr_schedules_extra.json")) {
    ASSERT_FALSE(c.expected.lr.empty());
    if (c.expected.lr.front().size() >= 2) multi_group.insert(c.name.substr(0, c.name.find('(')));
  }
  for (const char* scheduler :
       {"LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
        "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
        "CyclicLR", "OneCycleLR", "ReduceLROnPlateau", "SequentialLR", "ChainedScheduler"})
    EXPECT_TRUE(multi_group.count(scheduler)) << scheduler;
}

}  // namespace
}  // namespace kiln::optim::lr_test
