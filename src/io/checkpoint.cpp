#include "kiln/io/checkpoint.h"

#include <nlohmann/json.hpp>

#include "kiln/io/safetensors.h"
#include "src/util/json_parse.h"

namespace kiln::io {

// Note [Checkpoint layout]
// One safetensors file holds every part, so replacing it is one atomic rename (Note [Atomic file
// replacement]) and model, optimizer and scheduler state can never come from different steps.
// Names are "<part>.<name>" for tensors and "<part>.<key>" for values (in __metadata__), split
// at the first '.' when loading, which is why part names cannot contain one. Metadata keys
// without a '.' belong to the format itself: "kiln_checkpoint_parts" is a JSON list of the part
// names, which marks the file as a checkpoint and keeps parts that have no entries.
namespace {

constexpr const char* kPartsKey = "kiln_checkpoint_parts";

// (part, name) of "part.name", or nullopt when there is no '.'.
std::optional<std::pair<std::string, std::string>> split_name(const std::string& full) {
  const size_t dot = full.find('.');
  if (dot == std::string::npos) return std::nullopt;
  return std::pair(full.substr(0, dot), full.substr(dot + 1));
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path,
                     const std::map<std::string, StateDict>& parts) {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
  std::vector<std::string> part_names;
  for (const auto& [part, state] : parts) {
    KILN_CHECK(!part.empty() && part.find('.') == std::string::npos, ValueError,
               "save_checkpoint: {}: part name '{}' must be non-empty and must not contain '.' "
               "(it prefixes the part's entries as '<part>.<name>')",
               path.string(), part);
    part_names.push_back(part);
    for (const auto& [name, tensor] : state.tensors) tensors.emplace(part + "." + name, tensor);
    for (const auto& [key, value] : state.values) metadata.emplace(part + "." + key, value);
  }
  metadata[kPartsKey] = nlohmann::json(part_names).dump();
  save_safetensors(path, tensors, metadata);
}

std::map<std::string, StateDict> load_checkpoint(const std::filesystem::path& path) {
  SafetensorsFile file = load_safetensors(path);
  const auto parts_it = file.metadata.find(kPartsKey);
  KILN_CHECK(parts_it != file.metadata.end(), ValueError,
             "load_checkpoint: {} is a safetensors file but not a Kiln checkpoint (its metadata "
             "has no '{}' entry); read it with load_safetensors",
             path.string(), kPartsKey);
  std::map<std::string, StateDict> parts;
  nlohmann::json part_names;
  try {
    part_names = util::parse_json_bounded(parts_it->second, /*max_depth=*/1);
  } catch (const ValueError&) {
    // part_names stays null: reported below.
  }
  KILN_CHECK(part_names.is_array(), ValueError,
             "load_checkpoint: {} is corrupt: metadata '{}' must be a JSON list of part names, got "
             "{}",
             path.string(), kPartsKey, parts_it->second);
  for (const nlohmann::json& name : part_names) {
    KILN_CHECK(name.is_string(), ValueError,
               "load_checkpoint: {} is corrupt: metadata '{}' must be a JSON list of part names, "
               "got {}",
               path.string(), kPartsKey, parts_it->second);
    parts[name.get<std::string>()];
  }
  // Every entry must belong to a listed part; anything else means the file was not written by
  // save_checkpoint or was edited.
  const auto part_of = [&](const std::string& full, std::string_view kind) -> StateDict* {
    const auto split = split_name(full);
    const auto part = split ? parts.find(split->first) : parts.end();
    KILN_CHECK(part != parts.end(), ValueError,
               "load_checkpoint: {} is corrupt: {} '{}' belongs to none of the parts listed in "
               "'{}' ({})",
               path.string(), kind, full, kPartsKey, parts_it->second);
    return &part->second;
  };
  for (auto& [full, tensor] : file.tensors) {
    part_of(full, "tensor")->tensors.emplace(split_name(full)->second, std::move(tensor));
  }
  for (auto& [full, value] : file.metadata) {
    if (full == kPartsKey) continue;
    part_of(full, "value")->values.emplace(split_name(full)->second, std::move(value));
  }
  return parts;
}

}  // namespace kiln::io
