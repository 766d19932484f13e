// The text encoding of LR scheduler state in StateDict::values: numbers in their shortest form
// that reads back to the same double (fmt's "{}"), lists as JSON arrays ("[0.1, 0.2]"), flags as
// true/false. Readers check every entry and throw ValueError naming the scheduler and the entry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/state_dict.h"

namespace kiln::optim::detail {

class SchedulerStateWriter {
 public:
  SchedulerStateWriter(StateDict& dict, std::string prefix)
      : dict_(dict), prefix_(std::move(prefix)) {}

  void put(const std::string& key, double value);
  void put(const std::string& key, int64_t value);
  void put(const std::string& key, bool value);
  void put(const std::string& key, const std::string& value);
  void put(const std::string& key, const char* value) { put(key, std::string(value)); }
  void put(const std::string& key, const std::vector<double>& values);
  void put(const std::string& key, const std::vector<int64_t>& values);

  StateDict& dict() { return dict_; }
  const std::string& prefix() const { return prefix_; }

 private:
  StateDict& dict_;
  std::string prefix_;
};

class SchedulerStateReader {
 public:
  // `scheduler`: the name errors start with ("StepLR.load_state_dict: ...").
  SchedulerStateReader(const StateDict& dict, std::string prefix, std::string scheduler)
      : dict_(dict), prefix_(std::move(prefix)), scheduler_(std::move(scheduler)) {}

  bool has(const std::string& key) const;
  std::string text(const std::string& key) const;
  double real(const std::string& key) const;
  int64_t integer(const std::string& key) const;
  bool flag(const std::string& key) const;
  // `expected`: the required length (the number of parameter groups), if any.
  std::vector<double> reals(const std::string& key, std::optional<size_t> expected = {}) const;
  std::vector<int64_t> integers(const std::string& key) const;
  // One of `allowed`.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed) const;

  const StateDict& dict() const { return dict_; }
  const std::string& prefix() const { return prefix_; }
  const std::string& scheduler() const { return scheduler_; }

 private:
  const StateDict& dict_;
  std::string prefix_;
  std::string scheduler_;
};

}  // namespace kiln::optim::detail
