// Ops the harness does not check, each with the reason and where it is tested instead.
#include "tests/ops/harness.h"

namespace kiln::testing {

const std::vector<std::pair<std::string, std::string>>& harness_exemptions() {
  static const std::vector<std::pair<std::string, std::string>> list = {
      {"empty", "uninitialized values; shape/dtype checked in tests/ops/factory_test.cpp"},
      {"cond",
       "a higher-order op: its bodies are subgraphs, so it runs only from a graph; tested in "
       "tests/graph/higher_order_test.cpp (kiln::cond in tests/ops/control_flow_test.cpp)"},
      {"while_loop",
       "a higher-order op: its bodies are subgraphs, so it runs only from a graph; tested in "
       "tests/graph/higher_order_test.cpp (kiln::while_loop in tests/ops/control_flow_test.cpp)"},
      {"while_loop_with_history",
       "the forward of a differentiated while_loop, made only by AOT autograd (Note [A "
       "while_loop's history]); tested through compiled gradients in "
       "tests/inductor/higher_order_codegen_test.cpp"},
      {"scan",
       "a higher-order op: its body is a subgraph, so it runs only from a graph; tested in "
       "tests/capture/scan_test.cpp (kiln::scan and kiln::map in tests/ops/control_flow_test.cpp)"},
      {"_local_scalar_dense",
       "defines an unbacked symbol in a graph (Note [Scalar outputs in a graph]); tested through "
       "item<SymInt>() in tests/capture/unbacked_test.cpp"},
  };
  return list;
}

}  // namespace kiln::testing

namespace kiln::testing {

const std::vector<std::pair<std::string, std::string>>& gradcheck_exemptions() {
  static const std::vector<std::pair<std::string, std::string>> list = {
      {"scaled_dot_product_attention_backward",
       "runs only without create_graph: double backward through attention differentiates the "
       "composite form of its formula (scaled_dot_product_attention's gradcheck checks both)"},
      {"cond",
       "a higher-order op: the gradient is that of the ops its interpreted body runs "
       "(tests/graph/higher_order_test.cpp, tests/ops/control_flow_test.cpp)"},
      {"while_loop",
       "a higher-order op: the gradient is that of the ops its interpreted body runs "
       "(tests/graph/higher_order_test.cpp, tests/ops/control_flow_test.cpp)"},
      {"while_loop_with_history",
       "made only by AOT autograd, which differentiates it with its own backward loop "
       "(tests/inductor/higher_order_codegen_test.cpp)"},
      {"scan",
       "a higher-order op: eagerly its gradient is that of the unrolled body; compiled, AOT "
       "autograd gives it a backward scan (Note [A scan's backward], tests/capture/scan_test.cpp)"},
      {"where.Scalar",
       "its only tensor is the bool condition: nothing to differentiate (where and its other "
       "Scalar forms are checked)"},
  };
  return list;
}

}  // namespace kiln::testing
