// Programs to and from JSON text (Note [Programs are data] in program.h), and the graph-level
// cache: a Program stored under a key (the hash of the graph text, the input metas and the
// options), so a warm start skips lowering and scheduling.
#pragma once

#include <optional>
#include <string>

#include "src/runtime/program.h"

namespace kiln::runtime {

std::string to_json(const Program& program);
// Throws ValueError naming what is malformed.
Program program_from_json(const std::string& text);

// Graph-level cache in cache_dir()/graphs/<key>.json, written by atomic rename.
void store_program(const std::string& key, const Program& program);
// nullopt when absent, unreadable or malformed (a bad entry is ignored and later overwritten).
std::optional<Program> load_program(const std::string& key);

}  // namespace kiln::runtime
