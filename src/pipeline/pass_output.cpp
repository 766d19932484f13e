#include "src/pipeline/pass_output.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/error.h"
#include "src/runtime/program.h"

namespace kiln::pipeline {
namespace {

// Runs `check`, prefixing a ValueError's message with the pass that made the checked output.
template <class Check>
void checked(std::string_view pass, std::string_view what, Check&& check) {
  try {
    check();
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("pass '{}' produced an invalid {}: {}", pass, what, e.what()));
  }
}

std::string graph_text(const graph::Graph& g) { return graph::to_string(g); }

}  // namespace

std::string print_pass_output(const graph::Graph& g) { return graph_text(g); }

std::string print_pass_output(const aot::FunctionalGraph& g) {
  return fmt::format("{}mutated inputs: [{}]\n", graph_text(g.graph),
                     fmt::join(g.mutated_inputs, ", "));
}

std::string print_pass_output(const aot::JointGraph& g) {
  return fmt::format("{}primals {}, tangents {}, forward outputs {}\n", graph_text(g.graph),
                     g.num_primals, g.num_tangents, g.num_forward_outputs);
}

std::string print_pass_output(const aot::Partition& p) {
  std::vector<std::string> saved;
  for (const aot::SavedValue& s : p.saved) saved.push_back(s.name);
  return fmt::format("forward graph:\n{}backward graph:\n{}saved: [{}] ({} bytes)\n",
                     graph_text(p.forward), graph_text(p.backward), fmt::join(saved, ", "),
                     p.saved_bytes);
}

std::string print_pass_output(const PostGradGraph& g) { return g.changes + graph_text(g.graph); }

std::string print_pass_output(const LoweredGraph& l) { return lower::to_string(*l.lowering); }

std::string print_pass_output(const sched::Schedule& s) { return sched::to_string(s); }

std::string print_pass_output(const codegen::GeneratedCode& c) { return c.kernels; }

std::string print_pass_output(const std::shared_ptr<const runtime::KernelLibrary>& lib) {
  return lib ? fmt::format("{} (source {})\n", lib->path().string(), lib->hash())
             : std::string("no kernel library\n");
}

std::string print_pass_output(const LoadedProgram& p) { return p.description + "\n"; }

void verify_pass_output(const graph::Graph& g, std::string_view pass) {
  checked(pass, "graph", [&] { graph::verify(g); });
}

void verify_pass_output(const aot::FunctionalGraph& g, std::string_view pass) {
  checked(pass, "graph", [&] {
    graph::verify(g.graph);
    for (const graph::Node* node : g.graph.calls())
      KILN_CHECK(!node->mutates(), ValueError, "`{}` still mutates its input",
                 graph::to_string(*node));
  });
}

void verify_pass_output(const aot::JointGraph& g, std::string_view pass) {
  checked(pass, "joint graph", [&] { graph::verify(g.graph); });
}

void verify_pass_output(const aot::Partition& p, std::string_view pass) {
  checked(pass, "forward graph", [&] { graph::verify(p.forward); });
  checked(pass, "backward graph", [&] { graph::verify(p.backward); });
}

void verify_pass_output(const PostGradGraph& g, std::string_view pass) {
  checked(pass, "graph", [&] { graph::verify(g.graph); });
}

void verify_pass_output(const LoweredGraph& l, std::string_view pass) {
  checked(pass, "loop IR", [&] { lower::verify(*l.lowering); });
}

void verify_pass_output(const sched::Schedule& s, std::string_view pass) {
  checked(pass, "schedule", [&] {
    for (const sched::Step& step : s.steps) {
      if (const auto* k = std::get_if<sched::Kernel>(&step)) {
        KILN_CHECK(!k->nodes.empty(), ValueError, "kernel {} has no buffers", k->name);
        KILN_CHECK(!k->name.empty(), ValueError, "a kernel without a name");
      } else {
        KILN_CHECK(!std::get<sched::ExternCall>(step).outputs.empty(), ValueError,
                   "an extern call without outputs");
      }
    }
  });
}

void verify_pass_output(const codegen::GeneratedCode& c, std::string_view pass) {
  checked(pass, "program", [&] { runtime::verify(c.program); });
}

void verify_pass_output(const std::shared_ptr<const runtime::KernelLibrary>& lib,
                        std::string_view pass) {
  KILN_CHECK(lib != nullptr, ValueError, "pass '{}' produced no kernel library", pass);
}

void verify_pass_output(const LoadedProgram& p, std::string_view pass) {
  KILN_CHECK(p.run != nullptr, ValueError, "pass '{}' produced nothing to run", pass);
}

}  // namespace kiln::pipeline
