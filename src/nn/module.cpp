#include "kiln/nn/module.h"

#include <atomic>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "kiln/autograd.h"
#include "src/core/shape.h"
#include "src/core/tracing_hooks.h"

namespace kiln::nn {
namespace {

std::string join_quoted(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += fmt::format("{}\"{}\"", s.empty() ? "" : ", ", n);
  return s;
}

std::string dotted(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// PyTorch's _addindent: every line after the first gets `spaces` more spaces.
std::string indent_after_first_line(const std::string& s, int spaces) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out.append(static_cast<size_t>(spaces), ' ');
  }
  return out;
}

}  // namespace

namespace {
uint64_t next_module_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::string attribute_type_name(const AttributeValue& v) {
  static constexpr const char* kNames[] = {"bool", "int64", "double", "string"};
  return kNames[v.index()];
}
}  // namespace

Module::Module(std::string name) : name_(std::move(name)), id_(next_module_id()) {}

void Module::changed(std::string what) {
  version_ += 1;
  last_change_ = std::move(what);
}

void Module::to(Device device, bool non_blocking) {
  (void)non_blocking;
  KILN_CHECK(device == Device::CPU, NotImplementedError,
             "{}.to: Kiln's modules live on the CPU; moving one to {} is not supported", name_,
             device == Device::Meta ? "meta" : "another device");
}

void Module::to(Device device, ScalarType dtype, bool non_blocking) {
  to(device, non_blocking);
  to(dtype);
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (Module* m : modules()) fn(*m);
}

void Module::apply(const std::function<void(const std::string&, Module&)>& fn) {
  for (auto& [name, m] : named_modules()) fn(name, *m);
}

void Module::check_input_defined(const Tensor& input, std::string_view argument) const {
  KILN_CHECK(input.defined(), ValueError,
             "{}.forward: the {} is an undefined tensor (a default-constructed Tensor); pass a "
             "defined tensor",
             name_, argument);
}

Tensor Module::forward(const Tensor& input) {
  check_input_defined(input);
  throw NotImplementedError(fmt::format(
      "{}: this module has no forward(input) taking one tensor (got {} {}); call the forward "
      "overload its header declares",
      name_, dtype_name(input.dtype()), shape_str(input.sizes())));
}

// ---- registration ----

void Module::check_new_name(const std::string& name, std::string_view what) const {
  KILN_CHECK(!name.empty(), ValueError, "{}: a {} name must not be empty", name_, what);
  KILN_CHECK(name.find('.') == std::string::npos, ValueError,
             "{}: {} name \"{}\" must not contain '.' (dots separate submodule names)", name_, what,
             name);
  auto taken = [&](const auto& entries) {
    for (const auto& e : entries) {
      if constexpr (requires { e.name; }) {
        if (e.name == name) return true;
      } else {
        if (e.first == name) return true;
      }
    }
    return false;
  };
  KILN_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_) && !taken(attributes_),
             ValueError,
             "{}: cannot register {} \"{}\": a parameter, buffer, submodule or attribute of that "
             "name already exists",
             name_, what, name);
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "parameter");
  if (tensor.defined()) {
    KILN_CHECK(tensor.is_leaf(), ValueError,
               "{}: parameter \"{}\" must be a leaf tensor, but it was computed by {}; register "
               "tensor.detach() instead",
               name_, name, tensor.grad_fn() ? tensor.grad_fn()->name() : "an op");
    tensor.requires_grad_(requires_grad);
  }
  changed(fmt::format("parameter \"{}\" registered", name));
  parameters_.push_back({std::move(name), std::move(tensor), true});
  return parameters_.back().tensor;
}

Tensor& Module::register_buffer(std::string name, Tensor tensor, bool persistent) {
  check_new_name(name, "buffer");
  changed(fmt::format("buffer \"{}\" registered", name));
  buffers_.push_back({std::move(name), std::move(tensor), persistent});
  return buffers_.back().tensor;
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  check_new_name(name, "submodule");
  KILN_CHECK(module != nullptr, ValueError, "{}: submodule \"{}\" is null", name_, name);
  KILN_CHECK(module.get() != this, ValueError, "{}: a module cannot be its own submodule (\"{}\")",
             name_, name);
  changed(fmt::format("submodule \"{}\" registered", name));
  children_.emplace_back(std::move(name), std::move(module));
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> module) {
  KILN_CHECK(module != nullptr, ValueError, "{}: replace_module(\"{}\"): the new module is null",
             name_, name);
  KILN_CHECK(module.get() != this, ValueError,
             "{}: a module cannot be its own submodule (replace_module(\"{}\"))", name_, name);
  for (auto& [child_name, child] : children_) {
    if (child_name != name) continue;
    child = std::move(module);
    changed(fmt::format("submodule \"{}\" replaced", name));
    return;
  }
  throw ValueError(fmt::format(
      "{}: replace_module(\"{}\"): there is no submodule of that name; register_module adds one",
      name_, name));
}

// ---- attributes ----

void Module::register_attribute(std::string name, AttributeValue value) {
  check_new_name(name, "attribute");
  changed(fmt::format("attribute \"{}\" registered", name));
  attributes_.emplace_back(std::move(name), std::move(value));
}

void Module::set_attribute(const std::string& name, AttributeValue value) {
  for (auto& [attr_name, current] : attributes_) {
    if (attr_name != name) continue;
    KILN_CHECK(current.index() == value.index(), ValueError,
               "{}: set_attribute(\"{}\"): the attribute holds a {}, not a {}; an attribute keeps "
               "the type it was registered with",
               name_, name, attribute_type_name(current), attribute_type_name(value));
    current = std::move(value);
    return;
  }
  throw ValueError(fmt::format(
      "{}: set_attribute(\"{}\"): no attribute of that name; register_attribute adds one", name_,
      name));
}

const AttributeValue& Module::attribute(const std::string& name) const {
  for (const auto& [attr_name, value] : attributes_)
    if (attr_name == name) return value;
  throw ValueError(
      fmt::format("{}: no attribute named \"{}\"; register_attribute adds one", name_, name));
}

void Module::throw_attribute_type_error(const std::string& name) const {
  throw ValueError(fmt::format("{}: attribute \"{}\" holds a {}; read it as that type", name_, name,
                               attribute_type_name(attribute(name))));
}

Tensor& Module::parameter_slot(const std::string& name) {
  for (Slot& s : parameters_)
    if (s.name == name) return s.tensor;
  throw ValueError(fmt::format("{}: no parameter named \"{}\"", name_, name));
}

Tensor& Module::buffer_slot(const std::string& name) {
  for (Slot& s : buffers_)
    if (s.name == name) return s.tensor;
  throw ValueError(fmt::format("{}: no buffer named \"{}\"", name_, name));
}

// ---- walks ----

template <typename Self, typename Out>
void Module::collect_slots(Self& self, SlotKind kind, bool recurse, bool persistent_only,
                           const std::string& prefix, Out& out) {
  auto& slots = kind == SlotKind::Parameter ? self.parameters_ : self.buffers_;
  for (auto& slot : slots) {
    if (!slot.tensor.defined() || (persistent_only && !slot.persistent)) continue;
    out.emplace_back(dotted(prefix, slot.name), &slot.tensor);
  }
  if (!recurse) return;
  for (const auto& [child_name, child] : self.children_) {
    Self& c = *child;
    collect_slots(c, kind, true, persistent_only, dotted(prefix, child_name), out);
  }
}

namespace {

// Named tensors with each tensor listed once (the first name wins, as PyTorch).
std::vector<std::pair<std::string, Tensor>> unique_tensors(
    const std::vector<std::pair<std::string, const Tensor*>>& slots) {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<const TensorImpl*> seen;
  for (const auto& [name, t] : slots)
    if (seen.insert(t->impl()).second) out.emplace_back(name, *t);
  return out;
}

std::vector<Tensor> tensors_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<Tensor> out;
  out.reserve(named.size());
  for (const auto& [name, t] : named) out.push_back(t);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, const Tensor*>> slots;
  collect_slots(*this, SlotKind::Parameter, recurse, false, "", slots);
  return unique_tensors(slots);
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return tensors_of(named_parameters(recurse));
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, const Tensor*>> slots;
  collect_slots(*this, SlotKind::Buffer, recurse, false, "", slots);
  return unique_tensors(slots);
}

std::vector<std::pair<std::string, const Tensor*>> Module::named_tensor_slots() const {
  std::vector<std::pair<std::string, const Tensor*>> slots;
  collect_slots(*this, SlotKind::Parameter, true, false, "", slots);
  collect_slots(*this, SlotKind::Buffer, true, false, "", slots);
  return slots;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  return tensors_of(named_buffers(recurse));
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  std::set<const Module*> seen;
  for (const auto& [name, child] : children_)
    if (seen.insert(child.get()).second) out.emplace_back(name, child);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& [name, child] : named_children()) out.push_back(child);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  std::set<const Module*> seen;
  auto visit = [&](auto& self, const std::string& prefix, Module* m) -> void {
    if (!seen.insert(m).second) return;
    out.emplace_back(prefix, m);
    for (const auto& [name, child] : m->children_) self(self, dotted(prefix, name), child.get());
  };
  visit(visit, "", this);
  return out;
}

void Module::visit_modules(const std::function<void(const std::string&, int, const Module&)>& fn,
                           const std::string& name, int depth) const {
  fn(name, depth, *this);
  for (const auto& [child_name, child] : children_) child->visit_modules(fn, child_name, depth + 1);
}

std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (const auto& [name, m] : named_modules()) out.push_back(m);
  return out;
}

// ---- mode, dtype, gradients ----

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

void Module::to(ScalarType dtype) {
  KILN_CHECK(is_floating(dtype), DTypeError,
             "{}.to: modules convert to floating dtypes only, got {}; parameters and buffers "
             "keep their integer dtypes",
             name_, dtype_name(dtype));
  NoGradGuard no_grad;
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect_slots(*this, SlotKind::Parameter, true, false, "", slots);
  std::set<const TensorImpl*> done;  // a shared parameter is converted once, for every slot
  std::map<const TensorImpl*, Tensor> converted;
  for (auto& [name, slot] : slots) {
    if (!slot->is_floating_point() || slot->dtype() == dtype) continue;
    auto it = converted.find(slot->impl());
    if (it == converted.end()) {
      // A fresh leaf with the old one's requires_grad and a converted grad (Note [Parameter
      // slots]).
      Tensor fresh = slot->detach().to(dtype, /*copy=*/true);
      fresh.requires_grad_(slot->requires_grad());
      if (slot->grad().defined()) fresh.mutable_grad() = slot->grad().to(dtype, /*copy=*/true);
      it = converted.emplace(slot->impl(), fresh).first;
    }
    *slot = it->second;
  }
  slots.clear();
  collect_slots(*this, SlotKind::Buffer, true, false, "", slots);
  converted.clear();
  for (auto& [name, slot] : slots) {
    if (!slot->is_floating_point() || slot->dtype() == dtype) continue;
    auto it = converted.find(slot->impl());
    if (it == converted.end()) it = converted.emplace(slot->impl(), slot->to(dtype, true)).first;
    *slot = it->second;
  }
}

void Module::zero_grad(bool set_to_none) {
  // Inside kiln::compile: an effect, run again on every call (Note [Effects]).
  if (TracingHooks* hooks = current_tracing_hooks()) {
    hooks->effect(name() + ".zero_grad()", [this, set_to_none] { zero_grad(set_to_none); });
    return;
  }
  for (const Tensor& p : parameters()) {
    Tensor& grad = p.mutable_grad();
    if (!grad.defined()) continue;
    if (set_to_none) {
      grad = Tensor();
    } else {
      NoGradGuard no_grad;
      grad = grad.detach();
      grad.zero_();
    }
  }
}

// ---- saving ----

StateDict Module::state_dict() const {
  StateDict dict;
  std::vector<std::pair<std::string, const Tensor*>> slots;
  collect_slots(*this, SlotKind::Parameter, true, false, "", slots);
  collect_slots(*this, SlotKind::Buffer, true, /*persistent_only=*/true, "", slots);
  for (const auto& [name, t] : slots) dict.tensors.emplace(name, t->detach());
  return dict;
}

LoadStateDictResult Module::load_state_dict(const StateDict& dict, bool strict) {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect_slots(*this, SlotKind::Parameter, true, false, "", slots);
  collect_slots(*this, SlotKind::Buffer, true, /*persistent_only=*/true, "", slots);

  LoadStateDictResult result;
  std::vector<std::string> size_mismatches;
  std::set<std::string> expected;
  for (const auto& [name, slot] : slots) {
    expected.insert(name);
    auto it = dict.tensors.find(name);
    if (it == dict.tensors.end()) {
      result.missing_keys.push_back(name);
    } else if (!it->second.defined() || it->second.sizes() != slot->sizes()) {
      size_mismatches.push_back(fmt::format(
          "size mismatch for {}: copying a tensor with shape {} from the state dict, the shape "
          "in the current model is {}",
          name, it->second.defined() ? shape_str(it->second.sizes()) : "(undefined)",
          shape_str(slot->sizes())));
    }
  }
  for (const auto& [name, t] : dict.tensors)
    if (!expected.contains(name)) result.unexpected_keys.push_back(name);

  std::string key_errors;
  if (strict && !result.unexpected_keys.empty())
    key_errors += fmt::format("\n  Unexpected key(s) in state_dict: {}.",
                              join_quoted(result.unexpected_keys));
  if (strict && !result.missing_keys.empty())
    key_errors +=
        fmt::format("\n  Missing key(s) in state_dict: {}.", join_quoted(result.missing_keys));
  if (!size_mismatches.empty()) {
    std::string msg = fmt::format("Error(s) in loading state_dict for {}:", name_);
    for (const std::string& m : size_mismatches) msg += "\n  " + m + ".";
    throw ShapeError(msg + key_errors);
  }
  KILN_CHECK(key_errors.empty(), ValueError,
             "Error(s) in loading state_dict for {}:{}\n  Pass strict=false to load the matching "
             "keys only.",
             name_, key_errors);

  NoGradGuard no_grad;
  for (const auto& [name, slot] : slots) {
    auto it = dict.tensors.find(name);
    if (it != dict.tensors.end() && !it->second.is_same(*slot)) slot->copy_(it->second);
  }
  return result;
}

// ---- printing ----

std::string Module::repr() const {
  std::vector<std::string> lines;
  const std::string extra = extra_repr();
  size_t extra_lines = 0;
  if (!extra.empty()) {
    std::istringstream in(extra);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    extra_lines = lines.size();
  }
  for (const auto& [name, child] : children_)
    lines.push_back(fmt::format("({}): {}", name, indent_after_first_line(child->repr(), 2)));
  std::string s = name_ + "(";
  if (extra_lines == 1 && lines.size() == 1) {
    s += lines[0];
  } else if (!lines.empty()) {
    for (const std::string& line : lines) s += "\n  " + line;
    s += "\n";
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& module) { return os << module.repr(); }

}  // namespace kiln::nn
