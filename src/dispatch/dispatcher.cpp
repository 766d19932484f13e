#include "src/dispatch/dispatcher.h"

#include "src/core/shape.h"

#include <mutex>
#include <optional>
#include <unordered_map>

namespace kiln {

namespace {
// Note [Extending the op table]: extensions registered before the table was built.
struct Extensions {
  std::mutex mutex;
  OpRegistry* built = nullptr;
  std::vector<void (*)(OpRegistry&)> pending;
};
Extensions& extensions() {
  static Extensions e;
  return e;
}
}  // namespace

OpRegistry& OpRegistry::instance() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    register_all_ops(*r);
    Extensions& e = extensions();
    std::lock_guard lock(e.mutex);
    for (auto* extend : e.pending) extend(*r);
    e.pending.clear();
    e.built = r;
    return r;
  }();
  return *registry;
}

void OpRegistry::add_extension(void (*extend)(OpRegistry& registry)) {
  Extensions& e = extensions();
  std::unique_lock lock(e.mutex);
  if (e.built == nullptr) {
    e.pending.push_back(extend);
    return;
  }
  OpRegistry* r = e.built;
  lock.unlock();
  extend(*r);
}

OpDef& OpRegistry::add(OpDef def) {
  KILN_CHECK(find(def.name) == nullptr, ValueError, "op '{}' is registered twice", def.name);
  KILN_CHECK(def.meta != nullptr || def.composite != nullptr, ValueError,
             "op '{}' has neither a meta function nor a composite implementation", def.name);
  def.id = static_cast<OpId>(ops_.size());
  ops_.push_back(std::make_unique<OpDef>(std::move(def)));
  return *ops_.back();
}

const OpDef* OpRegistry::find(std::string_view name) const {
  for (const auto& op : ops_)
    if (op->name == name) return op.get();
  return nullptr;
}

OpId OpRegistry::id(std::string_view name) const {
  const OpDef* op = find(name);
  KILN_CHECK(op != nullptr, ValueError, "no op named '{}' in the op table", name);
  return op->id;
}

std::string_view dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::CPU:
      return "CPU";
    case DispatchKey::Meta:
      return "Meta";
    case DispatchKey::Subclass:
      return "Subclass";
    case DispatchKey::Record:
      return "Record";
    case DispatchKey::Autograd:
      return "Autograd";
    case DispatchKey::Vmap:
      return "Vmap";
    case DispatchKey::Trace:
      return "Trace";
  }
  return "?";
}

namespace dispatch {
namespace {

std::array<KeyHandler, kNumDispatchKeys>& fallbacks() {
  static std::array<KeyHandler, kNumDispatchKeys> table{};
  return table;
}

struct SchemaArgument {
  std::string_view type;  // "Tensor", "Tensor?", "Tensor(a!)", "Tensor[]", "int", ...
  std::string_view name;
};

// The schema's arguments in order (the `*` that starts keyword-only ones skipped).
std::vector<SchemaArgument> schema_arguments(const OpDef& op) {
  const std::string& schema = op.schema;
  const size_t open = schema.find('('), close = schema.rfind(") ->");
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  std::vector<SchemaArgument> out;
  size_t start = open + 1;
  while (start < close) {
    size_t end = schema.find(',', start);
    if (end == std::string::npos || end > close) end = close;
    std::string_view arg(schema.data() + start, end - start);
    while (!arg.empty() && arg.front() == ' ') arg.remove_prefix(1);
    if (!arg.empty() && arg != "*") {
      const size_t space = arg.find(' ');
      std::string_view name = space == std::string_view::npos ? "" : arg.substr(space + 1);
      name = name.substr(0, name.find('='));
      out.push_back({arg.substr(0, space), name});
    }
    start = end + 1;
  }
  return out;
}

// Which arguments must be defined tensors: plain `Tensor`s (not `Tensor?`), and every element of
// a `Tensor[]` (not `Tensor?[]`). Bit i for argument i.
struct RequiredTensors {
  uint64_t tensors = 0;
  uint64_t lists = 0;
};

RequiredTensors parse_required_tensors(const OpDef& op) {
  RequiredTensors mask;
  const std::vector<SchemaArgument> args = schema_arguments(op);
  for (size_t i = 0; i < args.size() && i < 64; ++i) {
    const std::string_view type = args[i].type;
    if (!type.starts_with("Tensor") || type.ends_with("?") || type.ends_with("?[]")) continue;
    if (type.ends_with("[]")) {
      mask.lists |= uint64_t{1} << i;
    } else {
      mask.tensors |= uint64_t{1} << i;
    }
  }
  return mask;
}

RequiredTensors required_tensors(const OpDef& op) {
  // Parsed once for the ops registered before the first call; an op added later is parsed on
  // each call (ops are registered at startup, so that is rare).
  static const std::vector<RequiredTensors> masks = [] {
    std::vector<RequiredTensors> m;
    for (const auto& def : OpRegistry::instance().ops()) m.push_back(parse_required_tensors(*def));
    return m;
  }();
  return op.id < masks.size() ? masks[op.id] : parse_required_tensors(op);
}

// An undefined Tensor (a default-constructed kiln::Tensor) where the schema takes a Tensor: raise
// here, naming the op and the argument, before a kernel or meta function reads it. `element` is
// the position in a tensor list, or -1.
[[noreturn]] void undefined_tensor_argument(const OpDef& op, size_t i, int64_t element = -1) {
  const std::vector<SchemaArgument> args = schema_arguments(op);
  const std::string name =
      i < args.size() && !args[i].name.empty() ? fmt::format(" (`{}`)", args[i].name) : "";
  const std::string which = element >= 0 ? fmt::format(", element {},", element) : "";
  throw ValueError(fmt::format(
      "{}: argument {}{}{} is an undefined tensor (a default-constructed kiln::Tensor); pass a "
      "defined tensor (schema: {})",
      op.name, i, name, which, op.schema));
}

// Refuses an undefined tensor where the schema requires one (a `Tensor`, or an element of a
// `Tensor[]`), naming the first. keys_of_args calls it when it meets an undefined tensor; a
// composite op, which reads its arguments' metadata itself, before it runs.
void check_required_tensors(const OpDef& op, const Stack& args) {
  const RequiredTensors required = required_tensors(op);
  for (size_t i = 0; i < args.size() && i < 64; ++i) {
    const IValue& v = args[i];
    if (v.is_tensor() && !v.tensor().defined() && (required.tensors >> i & 1) != 0)
      undefined_tensor_argument(op, i);
    if (v.is_tensor_list() && (required.lists >> i & 1) != 0) {
      const std::vector<Tensor>& list = v.tensor_list();
      for (size_t j = 0; j < list.size(); ++j)
        if (!list[j].defined()) undefined_tensor_argument(op, i, static_cast<int64_t>(j));
    }
  }
}

DispatchKeySet keys_of_args(const OpDef& op, const Stack& args) {
  DispatchKeySet keys;
  bool undefined = false;
  for (const IValue& v : args) {
    if (v.is_tensor()) {
      const Tensor& t = v.tensor();
      if (t.defined()) {
        keys = keys | t.impl()->keys();
      } else {
        undefined = true;
      }
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.tensor_list()) {
        if (t.defined()) {
          keys = keys | t.impl()->keys();
        } else {
          undefined = true;
        }
      }
    }
  }
  // An undefined tensor is fine where the schema takes `Tensor?`; elsewhere it is refused here.
  if (undefined) check_required_tensors(op, args);
  if (op.device_arg >= 0 && static_cast<size_t>(op.device_arg) < args.size() &&
      !args[op.device_arg].is_none()) {
    keys = keys.add(args[op.device_arg].device() == Device::Meta ? DispatchKey::Meta
                                                                 : DispatchKey::CPU);
  }
  return keys;
}

// The dtype of an op's first tensor argument must be one the op supports (OpDef::dtypes).
void check_dtype(const OpDef& op, const Stack& args) {
  // The main input's dtype: for factories the requested dtype (a factory's tensor argument, such
  // as rand.state's rng_state, is not its data), otherwise the first tensor argument.
  std::optional<ScalarType> dtype;
  const Tensor* input = nullptr;
  if (op.has_tag(kTagFactory)) {
    for (const IValue& v : args) {
      if (v.is_dtype()) {
        dtype = v.dtype();
        break;
      }
    }
  }
  for (const IValue& v : args) {
    if (dtype) break;
    if (v.is_tensor() && v.tensor().defined()) input = &v.tensor();
    if (v.is_tensor_list() && !v.tensor_list().empty()) input = &v.tensor_list()[0];
    if (input != nullptr) {
      dtype = input->dtype();
      break;
    }
  }
  if (!dtype || op.dtypes.contains(*dtype)) return;
  const std::string what = input != nullptr
                               ? fmt::format("input of shape {}", shape_str(input->sizes()))
                               : std::string("requested dtype");
  std::string supported;
  for (ScalarType s : kAllScalarTypes) {
    if (!op.dtypes.contains(s)) continue;
    if (!supported.empty()) supported += ", ";
    supported += dtype_name(s);
  }
  throw DTypeError(
      fmt::format("{}: dtype {} is not supported ({}); supported dtypes: {}. Convert "
                  "with .to(dtype) first",
                  op.name, dtype_name(*dtype), what, supported));
}

void run_backend(const OpDef& op, Stack& args, Stack& outputs, DispatchKey key) {
  check_dtype(op, args);
  const Device device = key == DispatchKey::Meta ? Device::Meta : Device::CPU;
  OpCall call(op, args, outputs, device);
  if (op.has_tag(kTagDynamicOutput)) {
    // The CPU kernel allocates; on Meta the meta function gives the data-dependent sizes as
    // unbacked symbols while tracing, or raises NotImplementedError (Note [Data-dependent output
    // sizes on Meta] in src/ops/index.cpp).
    if (device == Device::Meta) {
      KILN_CHECK(op.meta != nullptr, NotImplementedError,
                 "{}: the output shape depends on the input's values, so it cannot run on Meta "
                 "tensors; run it on CPU tensors",
                 op.name);
      op.meta(call);
    }
  } else {
    op.meta(call);
  }
  if (device == Device::CPU && op.cpu != nullptr) op.cpu(call);
  if (op.has_tag(kTagInplace)) args[0].tensor().bump_version();
}

}  // namespace

LocalKeys& local_keys() {
  thread_local LocalKeys keys;
  return keys;
}

void set_fallback(DispatchKey key, KeyHandler handler) {
  fallbacks()[static_cast<int>(key)] = std::move(handler);
}

void redispatch(const OpDef& op, Stack& args, Stack& outputs, DispatchKeySet keys) {
  while (!keys.empty()) {
    const DispatchKey key = keys.highest();
    if (is_backend_key(key)) {
      run_backend(op, args, outputs, key);
      return;
    }
    const KeyHandler& own = op.handlers[static_cast<int>(key)];
    const KeyHandler& handler = own ? own : fallbacks()[static_cast<int>(key)];
    if (handler) {
      handler(op, args, outputs, keys);
      return;
    }
    keys = keys.remove(key);  // no handler: fall through
  }
  throw Error(fmt::format(
      "{}: no backend to run on (no tensor argument and no device); pass a tensor or a device",
      op.name));
}

Stack call(OpId id, Stack& args) {
  const OpDef& op = OpRegistry::instance().get(id);
  Stack outputs;
  if (op.composite != nullptr) {
    check_required_tensors(op, args);
    OpCall call(op, args, outputs, Device::CPU);
    op.composite(call);
    return outputs;
  }
  const LocalKeys& local = local_keys();
  DispatchKeySet keys = (keys_of_args(op, args) | local.included) - local.excluded;
  redispatch(op, args, outputs, keys);
  return outputs;
}

std::vector<Tensor> call_for_tensors(OpId id, Stack& args) {
  Stack out = call(id, args);
  std::vector<Tensor> tensors;
  for (IValue& v : out) {
    if (v.is_tensor_list()) {
      for (const Tensor& t : v.tensor_list()) tensors.push_back(t);
    } else if (v.is_tensor()) {
      tensors.push_back(std::move(v.tensor()));
    } else {
      tensors.emplace_back();
    }
  }
  return tensors;
}

void rethrow_with_context(const Error& e, std::string_view context) {
  const std::string message = std::string(context) + e.what();
  if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(message);
  if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(message);
  if (dynamic_cast<const IndexError*>(&e)) throw IndexError(message);
  if (dynamic_cast<const ValueError*>(&e)) throw ValueError(message);
  if (dynamic_cast<const NotImplementedError*>(&e)) throw NotImplementedError(message);
  throw Error(message);
}

ExcludeKeysGuard::ExcludeKeysGuard(DispatchKeySet keys) : saved_(local_keys().excluded) {
  local_keys().excluded = saved_ | keys;
}
ExcludeKeysGuard::~ExcludeKeysGuard() { local_keys().excluded = saved_; }
IncludeKeysGuard::IncludeKeysGuard(DispatchKeySet keys) : saved_(local_keys().included) {
  local_keys().included = saved_ | keys;
}
IncludeKeysGuard::~IncludeKeysGuard() { local_keys().included = saved_; }

}  // namespace dispatch
}  // namespace kiln
