// What each pass makes, and for each such type how run_pass prints and verifies it (Note [Running
// a pass] in pass.h). A new pass with a new output type adds its two overloads here.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "src/aot/functionalize.h"
#include "src/aot/joint_graph.h"
#include "src/aot/partition.h"
#include "src/capture/backend.h"
#include "src/codegen/cpp/codegen.h"
#include "src/graph/graph.h"
#include "src/lower/graph_lowering.h"
#include "src/pipeline/post_grad.h"
#include "src/runtime/compiler.h"
#include "src/sched/scheduler.h"

namespace kiln::pipeline {

// The loop IR of one graph; it refers to the graph it was lowered from, so it holds a copy.
struct LoweredGraph {
  std::unique_ptr<graph::Graph> graph;
  std::unique_ptr<lower::GraphLowering> lowering;
};

// `load`'s output: the callable, and what it runs (for the log).
struct LoadedProgram {
  capture::CompiledGraph run;
  std::string description;
};

std::string print_pass_output(const graph::Graph& g);
std::string print_pass_output(const aot::FunctionalGraph& g);
std::string print_pass_output(const aot::JointGraph& g);
std::string print_pass_output(const aot::Partition& p);
std::string print_pass_output(const PostGradGraph& g);
std::string print_pass_output(const LoweredGraph& l);
std::string print_pass_output(const sched::Schedule& s);
std::string print_pass_output(const codegen::GeneratedCode& c);
std::string print_pass_output(const std::shared_ptr<const runtime::KernelLibrary>& lib);
std::string print_pass_output(const LoadedProgram& p);

// Each throws ValueError naming `pass` and what is wrong.
void verify_pass_output(const graph::Graph& g, std::string_view pass);
void verify_pass_output(const aot::FunctionalGraph& g, std::string_view pass);
void verify_pass_output(const aot::JointGraph& g, std::string_view pass);
void verify_pass_output(const aot::Partition& p, std::string_view pass);
void verify_pass_output(const PostGradGraph& g, std::string_view pass);
void verify_pass_output(const LoweredGraph& l, std::string_view pass);
void verify_pass_output(const sched::Schedule& s, std::string_view pass);
void verify_pass_output(const codegen::GeneratedCode& c, std::string_view pass);
void verify_pass_output(const std::shared_ptr<const runtime::KernelLibrary>& lib,
                        std::string_view pass);
void verify_pass_output(const LoadedProgram& p, std::string_view pass);

}  // namespace kiln::pipeline
