// When each buffer of a Program comes into existence during a run: facts derived once from the
// steps, shared by verify() and the Executor (Note [When expressions are evaluated] in
// executor.cpp).
#pragma once

#include <unordered_map>
#include <vector>

#include "src/runtime/program.h"

namespace kiln::runtime {

struct ProgramSchedule {
  explicit ProgramSchedule(const Program& program);

  // Per buffer: the first step that reads or writes it (steps.size() when only an output uses it).
  std::vector<int> first_use;
  // Per buffer: the extern step that produces it, or -1.
  std::vector<int> producer;
  // Per slot: the first step that uses a buffer in it (the slot is allocated just before).
  std::vector<int> slot_first_use;
  // Program::symbols[i] -> i.
  std::unordered_map<sym::ExprPtr, int> symbol_index;
};

}  // namespace kiln::runtime
