// Resuming mid-schedule: run k steps, save the optimizer's and the scheduler's state, build a fresh
// optimizer and scheduler, load both, continue; the whole sequence equals the uninterrupted one,
// for every configuration of the reference data and every k.
#include <gtest/gtest.h>

#include "tests/optim/lr_scheduler_helpers.h"

namespace kiln::optim::lr_test {
namespace {

void expect_resumes_exactly(const ReferenceCase& c, const ScheduleFactory& factory) {
  const size_t steps = c.expected.lr.size();
  Schedule uninterrupted = factory(c.metrics);
  Recorded want;
  run(uninterrupted, 0, steps, want);
  for (size_t k = 0; k < steps; ++k) {
    SCOPED_TRACE("resumed after " + std::to_string(k) + " steps");
    Schedule first = factory(c.metrics);
    Recorded got;
    run(first, 0, k, got);
    StateDict optimizer_state = first.optimizer->state_dict();
    StateDict scheduler_state = first.state_dict();

    Schedule second = factory(c.metrics);
    second.optimizer->load_state_dict(optimizer_state);
    second.load_state_dict(scheduler_state);
    run(second, k, steps, got);
    // The state is text, but every number reads back to the same double: exact equality.
    EXPECT_EQ(got.lr, want.lr);
    EXPECT_EQ(got.momentum, want.momentum);
    EXPECT_EQ(got.beta1, want.beta1);
  }
}

void check_file(const std::string& file) {
  for (const ReferenceCase& c : load_reference(file)) {
    SCOPED_TRACE(file + ": " + c.name);
    auto factory = schedule_cases().find(c.name);
    ASSERT_NE(factory, schedule_cases().end());
    expect_resumes_exactly(c, factory->second);
  }
}

TEST(LRSchedulerResume, SharedReferenceConfigurationsResumeExactly) {
  check_file("lr_schedules.json");
}

TEST(LRSchedulerResume, EveryModeAndOptionResumesExactly) { check_file("lr_schedules_extra.json"); }

}  // namespace
}  // namespace kiln::optim::lr_test
