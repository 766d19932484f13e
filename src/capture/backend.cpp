#include "src/capture/backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <mutex>

#include "kiln/error.h"
#include "src/graph/graph.h"

namespace kiln::capture {
namespace {

CompiledGraph eager_backend(const graph::Graph& g, std::span<const Tensor>, const CompileContext&) {
  auto owned = std::make_shared<graph::Graph>(g.clone());
  return [owned](std::span<const Tensor> inputs) { return graph::interpret(*owned, inputs); };
}

CompiledGraph count_backend(const graph::Graph& g, std::span<const Tensor> inputs,
                            const CompileContext& context) {
  CompileCounter& counter = compile_counter();
  counter.graphs += 1;
  for (const graph::Node* node : g.nodes())
    if (node->kind() == graph::NodeKind::Call) counter.ops += 1;
  return eager_backend(g, inputs, context);
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, Backend> backends{{"eager", eager_backend}, {"count", count_backend}};
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_backend(const std::string& name, Backend backend) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  KILN_CHECK(!name.empty() && backend, ValueError,
             "register_backend: a backend needs a non-empty name and a callable");
  KILN_CHECK(!r.backends.contains(name), ValueError,
             "register_backend: a backend named '{}' is already registered", name);
  r.backends.emplace(name, std::move(backend));
}

void register_backend(const std::string& name, SimpleBackend backend) {
  KILN_CHECK(backend != nullptr, ValueError,
             "register_backend: a backend needs a non-empty name and a callable");
  register_backend(
      name, [backend = std::move(backend)](const graph::Graph& g, std::span<const Tensor> inputs,
                                           const CompileContext&) { return backend(g, inputs); });
}

const Backend& lookup_backend(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.backends.find(name);
  if (it == r.backends.end()) {
    std::vector<std::string> names;
    for (const auto& [n, _] : r.backends) names.push_back(n);
    throw ValueError(fmt::format("compile: unknown backend '{}'; registered backends: {}", name,
                                 fmt::join(names, ", ")));
  }
  return it->second;  // std::map nodes are stable; backends are never removed
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [n, _] : r.backends) names.push_back(n);
  return names;
}

CompileCounter& compile_counter() {
  static CompileCounter counter;
  return counter;
}

}  // namespace kiln::capture
