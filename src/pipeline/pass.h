// The compiler's passes: their table, and run_pass, which every stage goes through.
//
// Note [Running a pass]
// The pipeline (pipeline.cpp) is a list of calls `x = run_pass(context, "name", [&] { ... })`, in
// the manner of Halide's lower_impl: each stage of the compiler after capture is one named pass
// from the table below. After a pass, run_pass
//   - times it (the pass_times of the compile's metrics);
//   - prints its output on `KILN_LOGS=passes` and writes it to the structured trace as the
//     artifact `pass_<name>` (built only when someone reads it);
//   - when verification is on (debug builds, KILN_VERIFY_PASSES=1, every ctest run), runs the
//     verifier of the output's type (graph::verify for graphs, lower::verify for loop IR), so a
//     pass that breaks an invariant fails there, naming itself, not three stages later;
//   - tells the context's PassObserver, which may stop the pipeline (PipelineStopped): a test
//     can look at the output of any pass without running the ones after it.
// A name not in the table is a ValueError, so `kiln passes` always lists what runs.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>

#include "kiln/error.h"
#include "src/capture/compile_context.h"
#include "src/pipeline/pass_output.h"

namespace kiln::pipeline {

struct PassInfo {
  std::string_view name;
  std::string_view input;   // the type it takes
  std::string_view output;  // the type it makes
  std::string_view file;    // where it is implemented
  std::string_view summary;
};

// Every pass, in pipeline order. The inference path skips joint_graph and partition; the training
// path runs decompose..load once for the forward graph and once for the backward graph.
std::span<const PassInfo> pass_table();
// The entry of `name`; ValueError naming the known passes when there is none.
const PassInfo& pass_info(std::string_view name);

// True when run_pass verifies each pass's output: in builds without NDEBUG, or when
// KILN_VERIFY_PASSES is set to anything but "0" (the test suite sets it).
bool verify_passes();

// Thrown by run_pass when the context's observer asks to stop after a pass; the pipeline lets it
// through to the caller that set the observer.
struct PipelineStopped {
  std::string pass;
};

namespace detail {
// Logging, tracing, verifying and observing after pass `name` (Note [Running a pass]).
void after_pass(const capture::CompileContext& context, const PassInfo& pass, double seconds,
                const std::function<std::string()>& print, const std::function<void()>& verify);
}  // namespace detail

// Runs `pass` (a callable returning the pass's output) as the pass called `name`.
template <class Pass>
auto run_pass(const capture::CompileContext& context, std::string_view name, Pass&& pass) {
  const PassInfo& info = pass_info(name);
  const auto start = std::chrono::steady_clock::now();
  auto output = pass();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  detail::after_pass(
      context, info, seconds, [&] { return print_pass_output(output); },
      [&] { verify_pass_output(output, info.name); });
  return output;
}

}  // namespace kiln::pipeline
