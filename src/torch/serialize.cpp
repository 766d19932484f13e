#include "kiln/torch/serialize.h"

#include <fmt/format.h>

#include "kiln/io/checkpoint.h"

namespace torch {

namespace {

kiln::StateDict load_part(const std::string& path, const std::string& part) {
  std::map<std::string, kiln::StateDict> parts = kiln::io::load_checkpoint(path);
  auto it = parts.find(part);
  if (it == parts.end()) {
    std::string held;
    for (const auto& [name, dict] : parts) held += (held.empty() ? "" : ", ") + name;
    throw kiln::ValueError(
        fmt::format("torch::load: {} holds no {} (it holds: {}); load it into what was saved there",
                    path, part, held.empty() ? "nothing" : held));
  }
  return std::move(it->second);
}

}  // namespace

void save(const kiln::nn::Module& module, const std::string& path) {
  kiln::io::save_checkpoint(path, {{"module", module.state_dict()}});
}
void save(const kiln::optim::Optimizer& optimizer, const std::string& path) {
  kiln::io::save_checkpoint(path, {{"optimizer", optimizer.state_dict()}});
}
void save(const Tensor& tensor, const std::string& path) {
  KILN_CHECK(tensor.defined(), ValueError,
             "torch::save: the tensor is undefined; there is nothing to save to {}", path);
  kiln::io::save_checkpoint(path, {{"tensor", kiln::StateDict{.tensors = {{"value", tensor}}}}});
}

void load(kiln::nn::Module& module, const std::string& path) {
  module.load_state_dict(load_part(path, "module"));
}
void load(kiln::optim::Optimizer& optimizer, const std::string& path) {
  optimizer.load_state_dict(load_part(path, "optimizer"));
}
void load(Tensor& tensor, const std::string& path) {
  kiln::StateDict dict = load_part(path, "tensor");
  auto it = dict.tensors.find("value");
  KILN_CHECK(it != dict.tensors.end(), ValueError,
             "torch::load: {} has a tensor part without its value", path);
  tensor = it->second;
}

}  // namespace torch
