// Checkpoints: the state of a training run (model, optimizer, LR scheduler, anything with a
// StateDict) in ONE safetensors file, so it is written and replaced as a unit.
//
// Layout (see Note [Checkpoint layout] in src/io/checkpoint.cpp): the tensor `w` of part `model`
// is stored as "model.w"; the value `lr` of part `optimizer` is the metadata entry
// "optimizer.lr"; the metadata entry "kiln_checkpoint_parts" lists the parts (so empty parts
// survive). A checkpoint is therefore also a plain safetensors file any tool can open.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "kiln/io/io_error.h"
#include "kiln/state_dict.h"

namespace kiln::io {

// Writes the parts to `path` atomically, as save_safetensors does: an existing checkpoint is
// replaced only once the new one is completely on disk, and a failed write (IOError) leaves it as
// it was. Part names must be non-empty and must not contain '.' (ValueError).
void save_checkpoint(const std::filesystem::path& path,
                     const std::map<std::string, StateDict>& parts);

// Reads a checkpoint written by save_checkpoint. A corrupt or truncated file is a ValueError (see
// load_safetensors); so is a safetensors file that is not a Kiln checkpoint.
std::map<std::string, StateDict> load_checkpoint(const std::filesystem::path& path);

}  // namespace kiln::io
