// See Note [Residuals of a scan] in scan_residuals.h.
#include "src/aot/scan_residuals.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::aot {
namespace {

bool is_product(const graph::Node& node) {
  static constexpr std::array<std::string_view, 11> kProducts = {
      "mm",     "addmm",  "bmm",    "baddbmm",          "conv1d",          "conv2d",
      "conv3d", "matmul", "linear", "conv_transpose2d", "conv_transpose1d"};
  const std::string_view name = node.op_def().name;
  return std::find(kProducts.begin(), kProducts.end(), name) != kProducts.end();
}

}  // namespace

std::vector<graph::Value*> choose_scan_residuals(const graph::Graph& vjp, size_t forward_inputs,
                                                 size_t per_step_inputs) {
  // For each value: does it depend on a tangent, and does it read a carry or a slice?
  struct Reach {
    bool tangent = false;
    bool per_step = false;
  };
  std::unordered_map<const graph::Value*, Reach> reach;
  const std::span<graph::Value* const> inputs = vjp.placeholders();
  for (size_t i = 0; i < inputs.size(); ++i)
    reach[inputs[i]] = {.tangent = i >= forward_inputs, .per_step = i < per_step_inputs};
  std::vector<graph::Value*> residuals;
  for (const graph::Node* node : vjp.calls()) {
    Reach r;
    for (const graph::Arg& arg : node->args()) {
      for (const graph::Value* v : arg.values()) {
        const Reach& in = reach[v];
        r.tangent |= in.tangent;
        r.per_step |= in.per_step;
      }
    }
    // Random ops and ops without inputs (zeros) are left where they are.
    if (node->has_side_effects()) r.tangent = true;
    for (graph::Value* out : node->outputs()) {
      reach[out] = r;
      if (!r.tangent && r.per_step && is_product(*node) && is_floating(out->meta().dtype) &&
          !out->users().empty())
        residuals.push_back(out);
    }
  }
  return residuals;
}

graph::Graph residuals_graph(const graph::Graph& vjp, const std::vector<graph::Value*>& residuals) {
  std::unordered_map<const graph::Value*, graph::Value*> mapping;
  graph::Graph copy = vjp.clone(&mapping);
  std::vector<graph::Value*> outputs;
  for (const graph::Value* r : residuals) outputs.push_back(mapping.at(r));
  copy.set_outputs(std::move(outputs));
  graph::eliminate_dead_code(copy);
  return copy;
}

void read_residuals_from_placeholders(graph::Graph& vjp, const std::vector<int>& residual_ids) {
  std::unordered_map<int, graph::Value*> by_id;
  for (graph::Node* node : vjp.calls())
    for (graph::Value* out : node->outputs()) by_id[out->id()] = out;
  for (int id : residual_ids) {
    const auto it = by_id.find(id);
    KILN_CHECK(it != by_id.end(), ValueError,
               "scan residuals: value %{} is no longer in the scan's vjp graph", id);
    const graph::TensorMeta& meta = it->second->meta();
    graph::Value* saved =
        vjp.add_placeholder("residual", graph::TensorMeta::contiguous(meta.dtype, meta.sizes));
    vjp.replace_all_uses(it->second, saved);
  }
  graph::eliminate_dead_code(vjp);
}

}  // namespace kiln::aot
