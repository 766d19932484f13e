// The compile cache of one compiled function: guard checks, the recompile policy, and running a
// cache entry's trace tree (DESIGN.md section 4; Note [Guard evaluation], Note [Trace tree]).
#include <fmt/format.h>

#include <fmt/ranges.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

#include "kiln/compile.h"
#include "src/capture/tracer.h"
#include "src/capture/verify.h"
#include "src/core/tracing_hooks.h"
#include "src/graph/graph.h"
#include "src/trace/logs.h"
#include "src/trace/metrics.h"
#include "src/trace/trace.h"

namespace kiln {

bool compile_verify_from_environment() {
  const char* value = std::getenv("KILN_COMPILE_VERIFY");
  return value != nullptr && std::string_view(value) == "1";
}

void mark_dynamic(const Tensor& t, int64_t dim) {
  KILN_CHECK(t.defined(), ValueError, "mark_dynamic: the tensor is undefined");
  KILN_CHECK(dim >= -t.dim() && dim < t.dim(), IndexError,
             "mark_dynamic: dim {} is out of range for a tensor of rank {}", dim, t.dim());
  const int64_t d = dim < 0 ? dim + t.dim() : dim;
  KILN_CHECK(d < 32, NotImplementedError,
             "mark_dynamic: only the first 32 dims can be marked dynamic (asked for dim {})", d);
  t.impl()->mark_dynamic_dim(d);
}

namespace capture {

struct CacheEntry {
  GuardSet guards;
  SymbolTable symbols;
  std::unique_ptr<Segment> root;                // null for an entry that runs eagerly
  std::vector<std::vector<bool>> dynamic_dims;  // the shape policy it was traced with
  std::string eager_reason;                     // why this entry runs the function eagerly
};

struct FunctionState {
  CompiledFunction::Body body;
  CompileOptions options;
  std::string name;
  std::mutex mutex;
  std::vector<std::unique_ptr<CacheEntry>> entries;
  CompileStats stats;
  // Automatic dynamic: per tensor argument, the sizes first seen and the dims that changed.
  std::vector<std::vector<int64_t>> first_sizes;
  std::vector<std::vector<bool>> changed;

  std::vector<Tensor> run_entry(CacheEntry& entry, const std::vector<ArgValue>& args,
                                const std::vector<int64_t>& values);
  // A trace that replays `path` (this call's segments so far, with their outputs): a new branch
  // (Note [Trace tree]) or, with verify_replay set, Note [Verify mode]'s retrace.
  TraceRequest replay_request(const CacheEntry& entry, const std::vector<ArgValue>& args,
                              const std::vector<Segment*>& path,
                              const std::vector<std::vector<Tensor>>& outputs);
  std::vector<Tensor> compile_new_entry(const std::vector<ArgValue>& args,
                                        const std::vector<std::string>& reasons);
  std::vector<std::vector<bool>> shape_policy(const std::vector<ArgValue>& args);
  void log_compile(const TraceResult& result, const GuardSet& guards, const SymbolTable& symbols,
                   double total_seconds, double guard_seconds,
                   const std::vector<std::string>& reasons);
  int frame_id = 0;
  std::source_location where;
  int branch_traces = 0;  // new branches traced under existing entries
  // The thread running a call, to turn a call from inside it (recursion) into an error instead of
  // a deadlock on `mutex`.
  std::atomic<std::thread::id> running_thread{};
};

std::vector<std::vector<bool>> FunctionState::shape_policy(const std::vector<ArgValue>& args) {
  std::vector<std::vector<bool>> dynamic;
  size_t k = 0;
  for (const ArgValue& a : args) {
    const Tensor* t = std::get_if<Tensor>(&a);
    if (t == nullptr) continue;
    if (!t->defined()) {  // None (Note [Guard evaluation]: guarded to stay undefined)
      dynamic.emplace_back();
      if (k >= first_sizes.size()) {
        first_sizes.emplace_back();
        changed.emplace_back();
      }
      ++k;
      continue;
    }
    const int64_t nd = t->dim();
    std::vector<bool> dims(nd, false);
    const IntArrayRef sizes = t->sizes();
    if (k >= first_sizes.size()) {
      first_sizes.emplace_back(sizes.begin(), sizes.end());
      changed.emplace_back(nd, false);
    } else if (static_cast<int64_t>(first_sizes[k].size()) != nd) {
      first_sizes[k].assign(sizes.begin(), sizes.end());  // a new rank starts over
      changed[k].assign(nd, false);
    } else {
      for (int64_t d = 0; d < nd; ++d)
        if (first_sizes[k][d] != sizes[d]) changed[k][d] = true;
    }
    for (int64_t d = 0; d < nd; ++d) {
      if (options.dynamic.has_value())
        dims[d] = *options.dynamic;
      else
        dims[d] = changed[k][d] || (d < 32 && ((t->impl()->marked_dynamic_dims() >> d) & 1u));
    }
    dynamic.push_back(std::move(dims));
    ++k;
  }
  return dynamic;
}

// Structured trace records and KILN_LOGS lines of one compile (DESIGN.md section 6). Nothing
// below builds text unless tracing or the category is on.
void FunctionState::log_compile(const TraceResult& result, const GuardSet& guards,
                                const SymbolTable& symbols, double total_seconds,
                                double guard_seconds, const std::vector<std::string>& reasons) {
  const trace::CompileId id{frame_id, stats.compiles - 1, 0};
  trace::log("dynamo_start", id, [&] {
    return nlohmann::json{
        {"stack", nlohmann::json::array({trace::stack_frame(
                      where.file_name(), static_cast<int>(where.line()), name)})}};
  });
  if (!reasons.empty()) {
    trace::log_artifact("recompile_reasons", id, [&] { return nlohmann::json(reasons); });
    trace::log_readable(
        trace::LogCategory::recompiles,
        [&] { return fmt::format("recompiling {}: {}", name, fmt::join(reasons, "; ")); }, id);
  }
  for (size_t k = 0; k < result.graph_texts.size(); ++k) {
    trace::log(
        "dynamo_output_graph", id,
        [&] {
          return nlohmann::json{{"segment", k}};
        },
        [&] { return result.graph_texts[k]; });
    trace::log_readable(
        trace::LogCategory::graph,
        [&] { return fmt::format("graph {} of {}:\n{}", k, name, result.graph_texts[k]); }, id);
  }
  for (const std::string& reason : result.break_reasons) {
    trace::log_artifact("dynamo_graph_break_reason", id, [&] { return reason; });
    trace::log_readable(
        trace::LogCategory::graph_breaks,
        [&] { return fmt::format("graph break in {} at {}", name, reason); }, id);
  }
  const std::string guard_text = capture::describe(guards, symbols);
  trace::log(
      "dynamo_guards", id, [] { return nlohmann::json::object(); },
      [&] {
        nlohmann::json list = nlohmann::json::array();
        std::istringstream lines(guard_text);
        for (std::string line; std::getline(lines, line);) list.push_back({{"code", line}});
        return list;
      });
  trace::log_readable(
      trace::LogCategory::guards,
      [&] { return fmt::format("guards of {}:\n{}", name, guard_text); }, id);
  for (const std::string& s : result.symbols_text) {
    trace::log("create_symbol", id, [&] { return nlohmann::json{{"symbol", s}}; });
    trace::log_readable(
        trace::LogCategory::dynamic, [&] { return "created " + s; }, id);
  }
  for (const std::string& g : result.shape_guards) {
    trace::log("guard_added", id, [&] { return nlohmann::json{{"expr", g}}; });
    trace::log_readable(
        trace::LogCategory::dynamic, [&] { return "guard added: " + g; }, id);
  }
  trace::log_compile_metrics([&] {
    trace::CompileMetrics m;
    m.id = id;
    m.co_name = name;
    m.co_filename = where.file_name();
    m.co_firstlineno = static_cast<int>(where.line());
    m.entire_frame_compile_time_s = total_seconds;
    m.trace_time_s = result.trace_seconds;
    m.guard_build_time_s = guard_seconds;
    m.backend_compile_time_s = result.backend_seconds;
    m.cache_size = static_cast<int64_t>(entries.size());
    m.guard_count = static_cast<int64_t>(guards.size());
    m.shape_env_guard_count = static_cast<int64_t>(result.shape_guards.size());
    m.graph_count = result.graphs;
    m.graph_break_count = result.breaks;
    m.graph_op_count = result.ops;
    m.graph_node_count = result.nodes;
    m.graph_input_count = result.placeholders;
    m.recompile_reasons = reasons;
    return m;
  });
}

std::vector<Tensor> FunctionState::compile_new_entry(const std::vector<ArgValue>& args,
                                                     const std::vector<std::string>& reasons) {
  const trace::Stopwatch watch;
  auto entry = std::make_unique<CacheEntry>();
  entry->guards.overlapping_args = overlapping_args(args);
  if (!entry->guards.overlapping_args.empty()) {  // Note [Input aliasing]
    const auto [i, j] = entry->guards.overlapping_args.front();
    entry->eager_reason = fmt::format(
        "arg{} and arg{} share memory; the function runs eagerly for arguments that overlap", i, j);
    trace::log_readable(
        trace::LogCategory::recompiles,
        [&] { return fmt::format("{}: {}", name, entry->eager_reason); },
        trace::CompileId{frame_id, stats.compiles, 0});
    stats.compiles += 1;
    entries.push_back(std::move(entry));
    stats.cache_entries = static_cast<int>(entries.size());
    return body(args);
  }
  entry->dynamic_dims = shape_policy(args);
  TraceRequest request{.body = &body,
                       .args = &args,
                       .options = &options,
                       .function_name = name,
                       .dynamic_dims = entry->dynamic_dims};
  const trace::CompileIdScope compile_id({frame_id, stats.compiles, 0});
  TraceResult result = trace(request);
  result.guards.overlapping_args = std::move(entry->guards.overlapping_args);
  entry->guards = std::move(result.guards);
  entry->symbols = std::move(result.symbols);
  entry->root = std::move(result.root);
  stats.compiles += 1;
  stats.graphs += result.graphs;
  stats.graph_breaks += result.breaks;
  log_compile(result, entry->guards, entry->symbols, watch.seconds(), result.guard_seconds,
              reasons);
  entries.push_back(std::move(entry));
  stats.cache_entries = static_cast<int>(entries.size());
  return std::move(result.results);
}

TraceRequest FunctionState::replay_request(const CacheEntry& entry,
                                           const std::vector<ArgValue>& args,
                                           const std::vector<Segment*>& path,
                                           const std::vector<std::vector<Tensor>>& outputs) {
  return TraceRequest{.body = &body,
                      .args = &args,
                      .options = &options,
                      .function_name = name,
                      .dynamic_dims = entry.dynamic_dims,
                      .replay_path = path,
                      .replay_outputs = outputs,
                      .replay_guards = &entry.guards};
}

std::vector<Tensor> FunctionState::run_entry(CacheEntry& entry, const std::vector<ArgValue>& args,
                                             const std::vector<int64_t>& values) {
  std::vector<std::vector<Tensor>> outputs;
  std::vector<Segment*> path;
  Segment* segment = entry.root.get();
  while (true) {
    run_effects(*segment);
    std::vector<Tensor> inputs = gather_inputs(*segment, args, outputs);
    outputs.push_back(segment->reference ? run_verified(*segment, inputs, name, options.backend,
                                                        static_cast<int>(path.size()))
                                         : segment->compiled(inputs));
    check_runtime_asserts(*segment, outputs, entry.symbols, values);
    path.push_back(segment);
    if (segment->brk && segment->brk->kind == BreakPoint::Kind::Backward)
      run_backward(*segment->brk, outputs);
    if (!segment->brk) {
      std::vector<Tensor> results;
      for (const OutputRef& ref : segment->results)
        results.push_back(outputs[ref.segment][ref.index]);
      if (options.verify) {  // Note [Verify mode]: the guards still describe this call
        TraceRequest request = replay_request(entry, args, path, outputs);
        request.verify_replay = true;
        trace(request);
      }
      return results;
    }
    const std::string key = branch_key(*segment->brk, outputs, entry.symbols, values);
    Segment* next = nullptr;
    if (auto it = segment->children.find(key); it != segment->children.end()) {
      for (auto& candidate : it->second) {
        std::vector<int64_t> scratch = values;
        if (check_guards(candidate->guards, entry.symbols, args, scratch)) {
          next = candidate.get();
          break;
        }
      }
    }
    if (next == nullptr) {
      // A branch this entry has not seen: trace again, replaying the prefix (Note [Trace tree]).
      // Branch traces count toward recompile_limit like entries: a break keyed on a value that
      // differs every call (an item() of a loss) would otherwise trace and compile forever.
      // This call's prefix already ran, so it finishes with the new branch; later calls run
      // the function eagerly.
      branch_traces += 1;
      if (static_cast<int>(entries.size()) + branch_traces >= options.recompile_limit &&
          !stats.fell_back_to_eager) {
        stats.fell_back_to_eager = true;
        std::cerr << fmt::format(
            "kiln::compile: {} hit the recompile limit ({}) with {} graph-break branches (the "
            "last at {}: {}); running it eagerly from now on. Raise "
            "CompileOptions::recompile_limit, or keep the value it branches on out of the "
            "function\n",
            name, options.recompile_limit, branch_traces, segment->brk->where,
            segment->brk->reason);
      }
      const TraceRequest request = replay_request(entry, args, path, outputs);
      const trace::Stopwatch watch;
      const trace::CompileIdScope compile_id({frame_id, stats.compiles, 0});
      TraceResult result = trace(request);
      stats.compiles += 1;
      stats.graphs += result.graphs;
      stats.graph_breaks += result.breaks;
      // Why the segments already there did not fit: a new break value, or failed guards.
      std::string why = "a value not seen before";
      if (auto it = segment->children.find(key); it != segment->children.end()) {
        std::vector<int64_t> scratch = values;
        check_guards(it->second.front()->guards, entry.symbols, args, scratch, &why);
      }
      const std::string reason = fmt::format("graph break at {} took a new branch ({}): {}",
                                             segment->brk->where, segment->brk->reason, why);
      stats.recompile_reasons.push_back(reason);
      log_compile(result, result.root->guards, entry.symbols, watch.seconds(), 0, {reason});
      path.back()->children[result.branch_key].push_back(std::move(result.root));
      return std::move(result.results);
    }
    segment = next;
  }
}

CompiledFunction::CompiledFunction(Body body, CompileOptions options, std::source_location where)
    : state_(std::make_shared<FunctionState>()) {
  static std::atomic<int> next_frame_id{0};
  state_->frame_id = next_frame_id++;
  state_->where = where;
  KILN_CHECK(options.recompile_limit >= 1, ValueError,
             "compile: recompile_limit must be at least 1, got {}", options.recompile_limit);
  lookup_backend(options.backend);  // an unknown backend fails here, not at the first call
  KILN_CHECK(options.partitioner == "min_cut" || options.partitioner == "default", ValueError,
             "compile: unknown partitioner '{}'; use \"min_cut\" (the default) or \"default\"",
             options.partitioner);
  state_->body = std::move(body);
  state_->name = !options.name.empty()
                     ? options.name
                     : fmt::format("fn at {}:{}", where.file_name(), where.line());
  state_->options = std::move(options);
}

std::vector<Tensor> CompiledFunction::call(const std::vector<ArgValue>& args) {
  FunctionState& s = *state_;
  KILN_CHECK(s.running_thread.load(std::memory_order_relaxed) != std::this_thread::get_id(),
             NotImplementedError,
             "{}: the compiled function called itself (recursion, e.g. through a std::function); "
             "a compiled function cannot be re-entered while it runs. Compile the non-recursive "
             "body, or call the plain function inside",
             s.name);
  // Called while another compiled function is being traced: the body is traced inline into the
  // caller's graph (as Dynamo inlines a nested compiled function), not compiled on its own with
  // fake tensors for arguments.
  if (current_tracing_hooks() != nullptr) return s.body(args);
  std::lock_guard lock(s.mutex);
  s.running_thread.store(std::this_thread::get_id(), std::memory_order_relaxed);
  struct ClearRunning {
    FunctionState& s;
    ~ClearRunning() { s.running_thread.store(std::thread::id(), std::memory_order_relaxed); }
  } clear_running{s};
  if (s.stats.fell_back_to_eager) return s.body(args);
  std::vector<int64_t> values;
  for (auto& entry : s.entries) {
    values.assign(entry->symbols.symbols.size(), 0);
    if (check_guards(entry->guards, entry->symbols, args, values)) {
      s.stats.cache_hits += 1;
      if (entry->root == nullptr) return s.body(args);
      return s.run_entry(*entry, args, values);
    }
  }
  if (!s.entries.empty()) {
    std::string reasons;
    for (size_t i = 0; i < s.entries.size(); ++i) {
      std::string why;
      values.assign(s.entries[i]->symbols.symbols.size(), 0);
      check_guards(s.entries[i]->guards, s.entries[i]->symbols, args, values, &why);
      reasons += fmt::format("{}{}", reasons.empty() ? "" : "; ", why);
    }
    if (static_cast<int>(s.entries.size()) >= s.options.recompile_limit) {
      s.stats.fell_back_to_eager = true;
      trace::log_artifact("recompile_limit_hit", trace::CompileId{s.frame_id, s.stats.compiles, 0},
                          [&] { return reasons; });
      std::cerr << fmt::format(
          "kiln::compile: {} hit the recompile limit ({}); running it eagerly from now on. Last "
          "guard failure: {}. Raise CompileOptions::recompile_limit or make the changing sizes "
          "dynamic (mark_dynamic)\n",
          s.name, s.options.recompile_limit, reasons);
      return s.body(args);
    }
    s.stats.recompile_reasons.push_back(reasons);
    return s.compile_new_entry(args, {reasons});
  }
  return s.compile_new_entry(args, {});
}

CompileStats CompiledFunction::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

namespace {
void describe_segment(const Segment& segment, const SymbolTable& symbols, const std::string& path,
                      std::string& out) {
  out += fmt::format("segment {}:\n{}", path, graph::to_string(segment.graph));
  if (!segment.guards.tensors.empty() || !segment.guards.shape_guards.empty())
    out += fmt::format("guards of segment {}:\n{}", path, describe(segment.guards, symbols));
  if (segment.brk)
    out += fmt::format("graph break at {}: {}\n", segment.brk->where, segment.brk->reason);
  int i = 0;
  for (const auto& [key, children] : segment.children)
    for (const auto& child : children)
      describe_segment(*child, symbols, fmt::format("{}.{}", path, i++), out);
}
}  // namespace

std::string CompiledFunction::describe() const {
  std::lock_guard lock(state_->mutex);
  std::string out;
  for (size_t i = 0; i < state_->entries.size(); ++i) {
    const CacheEntry& e = *state_->entries[i];
    out += fmt::format("cache entry {} guards:\n{}", i, capture::describe(e.guards, e.symbols));
    if (e.root == nullptr)
      out += fmt::format("runs eagerly: {}\n", e.eager_reason);
    else
      describe_segment(*e.root, e.symbols, std::to_string(i), out);
  }
  return out;
}

}  // namespace capture
}  // namespace kiln
