// The compile cache of one compiled function: guard checks, the recompile policy, and running a
// cache entry's trace tree (DESIGN.md section 4; Note [Guard evaluation], Note [Trace tree]).
#include <fmt/format.h>

#include <iostream>
#include <mutex>

#include "kiln/compile.h"
#include "src/capture/tracer.h"
#include "src/graph/printer.h"

namespace kiln {

void mark_dynamic(const Tensor& t, int64_t dim) {
  KILN_CHECK(t.defined(), ValueError, "mark_dynamic: the tensor is undefined");
  KILN_CHECK(dim >= -t.dim() && dim < t.dim() && t.dim() <= 32, IndexError,
             "mark_dynamic: dim {} is out of range for a tensor of rank {}", dim, t.dim());
  t.impl()->mark_dynamic_dim(dim < 0 ? dim + t.dim() : dim);
}

namespace capture {

struct CacheEntry {
  GuardSet guards;
  SymbolTable symbols;
  std::unique_ptr<Segment> root;
  std::vector<std::vector<bool>> dynamic_dims;  // the shape policy it was traced with
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
  std::vector<Tensor> compile_new_entry(const std::vector<ArgValue>& args);
  std::vector<std::vector<bool>> shape_policy(const std::vector<ArgValue>& args);
  void log_compile(const TraceResult& result);
};

std::vector<std::vector<bool>> FunctionState::shape_policy(const std::vector<ArgValue>& args) {
  std::vector<std::vector<bool>> dynamic;
  size_t k = 0;
  for (const ArgValue& a : args) {
    const Tensor* t = std::get_if<Tensor>(&a);
    if (t == nullptr) continue;
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
        dims[d] = changed[k][d] || ((t->impl()->marked_dynamic_dims() >> d) & 1u);
    }
    dynamic.push_back(std::move(dims));
    ++k;
  }
  return dynamic;
}

void FunctionState::log_compile(const TraceResult& result) {
  (void)result;
}

std::vector<Tensor> FunctionState::compile_new_entry(const std::vector<ArgValue>& args) {
  auto entry = std::make_unique<CacheEntry>();
  entry->dynamic_dims = shape_policy(args);
  TraceRequest request{.body = &body, .args = &args, .options = &options, .function_name = name,
                       .dynamic_dims = entry->dynamic_dims};
  TraceResult result = trace(request);
  entry->guards = std::move(result.guards);
  entry->symbols = std::move(result.symbols);
  entry->root = std::move(result.root);
  stats.compiles += 1;
  stats.graphs += result.graphs;
  stats.graph_breaks += result.breaks;
  log_compile(result);
  entries.push_back(std::move(entry));
  stats.cache_entries = static_cast<int>(entries.size());
  return std::move(result.results);
}

std::vector<Tensor> FunctionState::run_entry(CacheEntry& entry, const std::vector<ArgValue>& args,
                                             const std::vector<int64_t>& values) {
  std::vector<std::vector<Tensor>> outputs;
  std::vector<Segment*> path;
  Segment* segment = entry.root.get();
  while (true) {
    std::vector<Tensor> inputs = gather_inputs(*segment, args, outputs);
    outputs.push_back(segment->compiled(inputs));
    path.push_back(segment);
    if (!segment->brk) {
      std::vector<Tensor> results;
      for (const OutputRef& ref : segment->results)
        results.push_back(outputs[ref.segment][ref.index]);
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
      TraceRequest request{.body = &body, .args = &args, .options = &options,
                           .function_name = name, .dynamic_dims = entry.dynamic_dims,
                           .replay_path = path, .replay_outputs = outputs};
      TraceResult result = trace(request);
      stats.compiles += 1;
      stats.graphs += result.graphs;
      stats.graph_breaks += result.breaks;
      stats.recompile_reasons.push_back(fmt::format(
          "graph break at {} took a new branch ({})", segment->brk->where, segment->brk->reason));
      log_compile(result);
      path.back()->children[result.branch_key].push_back(std::move(result.root));
      return std::move(result.results);
    }
    segment = next;
  }
}

CompiledFunction::CompiledFunction(Body body, CompileOptions options, std::source_location where)
    : state_(std::make_shared<FunctionState>()) {
  KILN_CHECK(options.recompile_limit >= 1, ValueError,
             "compile: recompile_limit must be at least 1, got {}", options.recompile_limit);
  lookup_backend(options.backend);  // an unknown backend fails here, not at the first call
  state_->body = std::move(body);
  state_->name = !options.name.empty()
                     ? options.name
                     : fmt::format("fn at {}:{}", where.file_name(), where.line());
  state_->options = std::move(options);
}

std::vector<Tensor> CompiledFunction::call(const std::vector<ArgValue>& args) {
  FunctionState& s = *state_;
  std::lock_guard lock(s.mutex);
  if (s.stats.fell_back_to_eager) return s.body(args);
  std::vector<int64_t> values;
  for (auto& entry : s.entries) {
    values.assign(entry->symbols.symbols.size(), 0);
    if (check_guards(entry->guards, entry->symbols, args, values)) {
      s.stats.cache_hits += 1;
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
      std::cerr << fmt::format(
          "kiln::compile: {} hit the recompile limit ({}); running it eagerly from now on. Last "
          "guard failure: {}. Raise CompileOptions::recompile_limit or make the changing sizes "
          "dynamic (mark_dynamic)\n",
          s.name, s.options.recompile_limit, reasons);
      return s.body(args);
    }
    s.stats.recompile_reasons.push_back(reasons);
  }
  return s.compile_new_entry(args);
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
    describe_segment(*e.root, e.symbols, std::to_string(i), out);
  }
  return out;
}

}  // namespace capture
}  // namespace kiln
