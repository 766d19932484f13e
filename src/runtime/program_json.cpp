// Programs as JSON (Note [Programs are data] in program.h) and the graph-level cache.
//
// Note [Program JSON format]
// {
//   "format": "kiln.program", "version": 1,
//   "num_inputs": 2,
//   "symbols": ["s0", "u0"],                       expressions as sym::to_string text
//   "symbol_sources": [{"symbol": "s0", "from": "input_size", "index": 0, "dim": 0}, ...],
//   "buffers": [{"kind": "input" | "intermediate" | "extern", "name": "arg0", "dtype": "f32",
//                "layout": {"sizes": ["s0"], "strides": ["1"], "offset": "0"},
//                "input": 0, "slot": -1}, ...],
//   "slot_bytes": ["4*s0"],
//   "steps": [{"kernel": {"name": "kernel0", "buffers": [0, 1, 2]}},
//             {"extern": {"call": "<graph text>", "args": [0], "arg_views": [layout...],
//                         "outputs": [3]}},
//             {"copy": {"dst": 0, "src": 2}}],
//   "outputs": [{"buffer": 2, "view": layout}],
//   "source_hash": "..."
// }
// dtypes are the graph text's short names (f32, i64, u8, ...). Reading checks every field's
// presence and type and names the JSON path of a bad one (`steps[2].extern.args[0]`), then runs
// verify().
//
// Note [Checksummed graph cache entries]
// A graph cache file is one line `kiln.program md5=<32 hex digits>` and then the program's JSON;
// the digest covers the JSON bytes. A program that parses and verifies can still be wrong (a
// buffer's input index changed by one gives other values, with no error), so every load checks
// the digest, as the kernel libraries' trailers are checked (Note [Code cache]). A file that
// fails, or does not parse, is a damaged entry: load_program warns once, naming the file, and
// the caller compiles again and replaces it.
#include <nlohmann/json.hpp>

#include "kiln/error.h"
#include "kiln/io/io_error.h"
#include "src/graph/text.h"
#include "src/runtime/code_cache.h"
#include "src/runtime/program_json.h"
#include "src/trace/md5.h"
#include "src/util/atomic_file.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace kiln::runtime {

namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;

// ---- writing ----

json expr_json(sym::ExprPtr e) {
  KILN_CHECK(e != nullptr, ValueError, "to_json: the program has a missing (null) expression");
  return sym::to_string(e);
}

json layout_json(const Layout& layout) {
  json sizes = json::array(), strides = json::array();
  for (sym::ExprPtr e : layout.sizes) sizes.push_back(expr_json(e));
  for (sym::ExprPtr e : layout.strides) strides.push_back(expr_json(e));
  json out = {{"sizes", std::move(sizes)}, {"strides", std::move(strides)}};
  out["offset"] = layout.offset == nullptr ? json("0") : expr_json(layout.offset);
  return out;
}

const char* from_name(SymbolSource::From from) {
  switch (from) {
    case SymbolSource::From::InputSize:
      return "input_size";
    case SymbolSource::From::InputStride:
      return "input_stride";
    case SymbolSource::From::ExternOutputSize:
      return "extern_output_size";
    case SymbolSource::From::ExternOutputValue:
      return "extern_output_value";
  }
  return "?";
}

const char* kind_name(BufferDesc::Kind kind) {
  switch (kind) {
    case BufferDesc::Kind::Input:
      return "input";
    case BufferDesc::Kind::Intermediate:
      return "intermediate";
    case BufferDesc::Kind::Extern:
      return "extern";
  }
  return "?";
}

json program_json(const Program& p);
Program read_program(const json& j, const std::string& path);

json step_json(const Step& step) {
  if (const auto* kernel = std::get_if<KernelStep>(&step))
    return {{"kernel", {{"name", kernel->name}, {"buffers", kernel->buffers}}}};
  if (const auto* call = std::get_if<ExternStep>(&step)) {
    json views = json::array();
    for (const Layout& view : call->arg_views) views.push_back(layout_json(view));
    json e = {{"call", call->call},
              {"args", call->args},
              {"arg_views", std::move(views)},
              {"outputs", call->outputs}};
    if (!call->bodies.empty()) {
      json bodies = json::array();
      for (const Program& body : call->bodies) bodies.push_back(program_json(body));
      e["bodies"] = std::move(bodies);
    }
    return {{"extern", std::move(e)}};
  }
  const auto& copy = std::get<CopyStep>(step);
  return {{"copy", {{"dst", copy.dst}, {"src", copy.src}}}};
}

// ---- reading: every accessor names the JSON path of what is wrong ----

[[noreturn]] void malformed(const std::string& path, const std::string& problem) {
  throw ValueError(
      fmt::format("program_from_json: {}: {}", path.empty() ? "(top level)" : path, problem));
}

const json& field(const json& object, const std::string& path, const char* name) {
  if (!object.is_object()) malformed(path, "expected an object");
  auto it = object.find(name);
  if (it == object.end()) malformed(path, fmt::format("missing field \"{}\"", name));
  return *it;
}

std::string join(const std::string& path, const char* name) {
  return path.empty() ? std::string(name) : path + "." + name;
}
std::string index_path(const std::string& path, size_t i) { return fmt::format("{}[{}]", path, i); }

int read_int(const json& j, const std::string& path) {
  if (!j.is_number_integer()) malformed(path, fmt::format("expected an integer, got {}", j.dump()));
  const int64_t v = j.get<int64_t>();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    malformed(path, fmt::format("{} is out of range", v));
  return static_cast<int>(v);
}

std::string read_string(const json& j, const std::string& path) {
  if (!j.is_string()) malformed(path, fmt::format("expected a string, got {}", j.dump()));
  return j.get<std::string>();
}

const json& read_array(const json& j, const std::string& path) {
  if (!j.is_array()) malformed(path, fmt::format("expected an array, got {}", j.dump()));
  return j;
}

sym::ExprPtr read_expr(const json& j, const std::string& path) {
  const std::string text = read_string(j, path);
  try {
    return sym::parse(text);
  } catch (const Error& e) {
    malformed(path, fmt::format("'{}' is not an expression: {}", text, e.what()));
  }
}

std::vector<int> read_ints(const json& j, const std::string& path) {
  std::vector<int> out;
  const json& array = read_array(j, path);
  for (size_t i = 0; i < array.size(); ++i) out.push_back(read_int(array[i], index_path(path, i)));
  return out;
}

std::vector<sym::ExprPtr> read_exprs(const json& j, const std::string& path) {
  std::vector<sym::ExprPtr> out;
  const json& array = read_array(j, path);
  for (size_t i = 0; i < array.size(); ++i) out.push_back(read_expr(array[i], index_path(path, i)));
  return out;
}

Layout read_layout(const json& j, const std::string& path) {
  Layout layout;
  layout.sizes = read_exprs(field(j, path, "sizes"), join(path, "sizes"));
  layout.strides = read_exprs(field(j, path, "strides"), join(path, "strides"));
  layout.offset = read_expr(field(j, path, "offset"), join(path, "offset"));
  if (layout.offset->is_integer() && layout.offset->value() == 0) layout.offset = nullptr;
  return layout;
}

SymbolSource read_symbol_source(const json& j, const std::string& path) {
  SymbolSource source;
  source.symbol = read_expr(field(j, path, "symbol"), join(path, "symbol"));
  const std::string from = read_string(field(j, path, "from"), join(path, "from"));
  if (from == "input_size")
    source.from = SymbolSource::From::InputSize;
  else if (from == "input_stride")
    source.from = SymbolSource::From::InputStride;
  else if (from == "extern_output_size")
    source.from = SymbolSource::From::ExternOutputSize;
  else if (from == "extern_output_value")
    source.from = SymbolSource::From::ExternOutputValue;
  else
    malformed(join(path, "from"),
              fmt::format("unknown symbol source \"{}\" (expected input_size, "
                          "input_stride, extern_output_size or extern_output_value)",
                          from));
  source.index = read_int(field(j, path, "index"), join(path, "index"));
  source.dim = read_int(field(j, path, "dim"), join(path, "dim"));
  if (j.contains("output")) source.output = read_int(j["output"], join(path, "output"));
  return source;
}

BufferDesc read_buffer(const json& j, const std::string& path) {
  BufferDesc buffer;
  const std::string kind = read_string(field(j, path, "kind"), join(path, "kind"));
  if (kind == "input")
    buffer.kind = BufferDesc::Kind::Input;
  else if (kind == "intermediate")
    buffer.kind = BufferDesc::Kind::Intermediate;
  else if (kind == "extern")
    buffer.kind = BufferDesc::Kind::Extern;
  else
    malformed(
        join(path, "kind"),
        fmt::format("unknown buffer kind \"{}\" (expected input, intermediate or extern)", kind));
  buffer.name = read_string(field(j, path, "name"), join(path, "name"));
  const std::string dtype = read_string(field(j, path, "dtype"), join(path, "dtype"));
  const std::optional<ScalarType> t = graph::text::dtype_from_short_name(dtype);
  if (!t) malformed(join(path, "dtype"), fmt::format("unknown dtype \"{}\"", dtype));
  buffer.dtype = *t;
  buffer.layout = read_layout(field(j, path, "layout"), join(path, "layout"));
  buffer.input = read_int(field(j, path, "input"), join(path, "input"));
  buffer.slot = read_int(field(j, path, "slot"), join(path, "slot"));
  return buffer;
}

Step read_step(const json& j, const std::string& path) {
  if (!j.is_object() || j.size() != 1)
    malformed(path, "expected an object with one field: \"kernel\", \"extern\" or \"copy\"");
  if (j.contains("kernel")) {
    const std::string p = join(path, "kernel");
    const json& k = j["kernel"];
    return KernelStep{read_string(field(k, p, "name"), join(p, "name")),
                      read_ints(field(k, p, "buffers"), join(p, "buffers"))};
  }
  if (j.contains("extern")) {
    const std::string p = join(path, "extern");
    const json& e = j["extern"];
    ExternStep step;
    step.call = read_string(field(e, p, "call"), join(p, "call"));
    step.args = read_ints(field(e, p, "args"), join(p, "args"));
    const std::string views_path = join(p, "arg_views");
    const json& views = read_array(field(e, p, "arg_views"), views_path);
    for (size_t i = 0; i < views.size(); ++i)
      step.arg_views.push_back(read_layout(views[i], index_path(views_path, i)));
    step.outputs = read_ints(field(e, p, "outputs"), join(p, "outputs"));
    if (e.contains("bodies")) {
      const std::string bodies_path = join(p, "bodies");
      const json& bodies = read_array(e["bodies"], bodies_path);
      for (size_t i = 0; i < bodies.size(); ++i)
        step.bodies.push_back(read_program(bodies[i], index_path(bodies_path, i)));
    }
    return step;
  }
  if (j.contains("copy")) {
    const std::string p = join(path, "copy");
    const json& c = j["copy"];
    return CopyStep{read_int(field(c, p, "dst"), join(p, "dst")),
                    read_int(field(c, p, "src"), join(p, "src"))};
  }
  malformed(path, fmt::format("unknown step kind \"{}\" (expected kernel, extern or copy)",
                              j.begin().key()));
}

Program read_program(const json& j, const std::string& path) {
  const std::string format = read_string(field(j, path, "format"), join(path, "format"));
  if (format != "kiln.program")
    malformed(join(path, "format"), fmt::format("\"{}\" is not \"kiln.program\"", format));
  const int version = read_int(field(j, path, "version"), join(path, "version"));
  if (version != kFormatVersion)
    malformed(join(path, "version"),
              fmt::format("version {} is not the supported version {}", version, kFormatVersion));
  Program p;
  p.num_inputs = read_int(field(j, path, "num_inputs"), join(path, "num_inputs"));
  p.symbols = read_exprs(field(j, path, "symbols"), join(path, "symbols"));
  const json& sources = read_array(field(j, path, "symbol_sources"), join(path, "symbol_sources"));
  for (size_t i = 0; i < sources.size(); ++i)
    p.symbol_sources.push_back(
        read_symbol_source(sources[i], index_path(join(path, "symbol_sources"), i)));
  const json& buffers = read_array(field(j, path, "buffers"), join(path, "buffers"));
  for (size_t i = 0; i < buffers.size(); ++i)
    p.buffers.push_back(read_buffer(buffers[i], index_path(join(path, "buffers"), i)));
  p.slot_bytes = read_exprs(field(j, path, "slot_bytes"), join(path, "slot_bytes"));
  const json& steps = read_array(field(j, path, "steps"), join(path, "steps"));
  for (size_t i = 0; i < steps.size(); ++i)
    p.steps.push_back(read_step(steps[i], index_path(join(path, "steps"), i)));
  const json& outputs = read_array(field(j, path, "outputs"), join(path, "outputs"));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string out = index_path(join(path, "outputs"), i);
    p.outputs.push_back(OutputDesc{read_int(field(outputs[i], out, "buffer"), join(out, "buffer")),
                                   read_layout(field(outputs[i], out, "view"), join(out, "view"))});
  }
  p.source_hash = read_string(field(j, path, "source_hash"), join(path, "source_hash"));
  return p;
}

std::filesystem::path graph_cache_path(const std::string& key) {
  bool valid = !key.empty() && key.size() <= 128;
  for (char c : key)
    valid = valid && (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_');
  KILN_CHECK(valid, ValueError,
             "graph cache: '{}' is not a valid key (use 1 to 128 letters, digits, '-' or '_', "
             "e.g. a hex hash)",
             key);
  const std::filesystem::path dir = cache_dir() / "graphs";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  KILN_CHECK(!error, IOError, "graph cache: cannot create {}: {}", dir.string(), error.message());
  return dir / (key + ".json");
}

}  // namespace

namespace {

json program_json(const Program& p) {
  json sources = json::array();
  for (const SymbolSource& s : p.symbol_sources) {
    json source = {{"symbol", expr_json(s.symbol)},
                   {"from", from_name(s.from)},
                   {"index", s.index},
                   {"dim", s.dim}};
    if (s.from_step()) source["output"] = s.output;
    sources.push_back(std::move(source));
  }
  json buffers = json::array();
  for (const BufferDesc& b : p.buffers) {
    buffers.push_back({{"kind", kind_name(b.kind)},
                       {"name", b.name},
                       {"dtype", std::string(graph::text::short_dtype_name(b.dtype))},
                       {"layout", layout_json(b.layout)},
                       {"input", b.input},
                       {"slot", b.slot}});
  }
  json symbols = json::array(), slot_bytes = json::array(), steps = json::array(),
       outputs = json::array();
  for (sym::ExprPtr s : p.symbols) symbols.push_back(expr_json(s));
  for (sym::ExprPtr e : p.slot_bytes) slot_bytes.push_back(expr_json(e));
  for (const Step& step : p.steps) steps.push_back(step_json(step));
  for (const OutputDesc& o : p.outputs)
    outputs.push_back({{"buffer", o.buffer}, {"view", layout_json(o.view)}});
  json out = {{"format", "kiln.program"},
              {"version", kFormatVersion},
              {"num_inputs", p.num_inputs},
              {"symbols", std::move(symbols)},
              {"symbol_sources", std::move(sources)},
              {"buffers", std::move(buffers)},
              {"slot_bytes", std::move(slot_bytes)},
              {"steps", std::move(steps)},
              {"outputs", std::move(outputs)},
              {"source_hash", p.source_hash}};
  return out;
}

}  // namespace

std::string to_json(const Program& p) { return program_json(p).dump(1); }

Program program_from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw ValueError(fmt::format("program_from_json: not valid JSON: {}", e.what()));
  }
  Program program = read_program(j, "");
  verify(program);
  return program;
}

namespace {
constexpr std::string_view kEntryHeader = "kiln.program md5=";
}  // namespace

void store_program(const std::string& key, const Program& program) {
  const std::string json_text = to_json(program);
  const std::string text =
      fmt::format("{}{}\n{}", kEntryHeader, trace::md5_hex(json_text), json_text);
  const std::span<const std::byte> bytes = std::as_bytes(std::span(text.data(), text.size()));
  util::write_file_atomically(graph_cache_path(key), std::span(&bytes, 1), "store_program");
}

std::optional<Program> load_program(const std::string& key) {
  const std::filesystem::path path = graph_cache_path(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream stream;
  stream << in.rdbuf();
  const std::string text = stream.str();
  auto damaged = [&](const std::string& why) -> std::optional<Program> {
    std::cerr << fmt::format(
        "kiln: warning: the graph cache entry {} is damaged ({}); compiling the graph again and "
        "replacing it\n",
        path.string(), why);
    return std::nullopt;
  };
  const size_t newline = text.find('\n');
  if (!text.starts_with(kEntryHeader) || newline == std::string::npos)
    return damaged("no checksum line");
  const std::string_view digest =
      std::string_view(text).substr(kEntryHeader.size(), newline - kEntryHeader.size());
  const std::string_view json_text = std::string_view(text).substr(newline + 1);
  if (digest != trace::md5_hex(json_text)) return damaged("checksum mismatch");
  try {
    return program_from_json(std::string(json_text));
  } catch (const ValueError& e) {
    return damaged(e.what());
  }
}

}  // namespace kiln::runtime
