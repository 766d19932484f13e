// nn::Module: the base of every layer, as torch.nn.Module. A module owns named parameters
// (tensors that training updates), buffers (state that is saved but not trained, such as
// BatchNorm's running statistics) and submodules, and walks them recursively: named_parameters()
// gives dotted names ("layer1.weight"), state_dict()/load_state_dict() save and restore them,
// train()/eval() switch every submodule, to(dtype) converts them.
//
// Modules are created as std::shared_ptr (submodules are shared with their parent):
//
//   struct Net : nn::Module {
//     Net() : Module("Net") {
//       fc1 = register_module("fc1", std::make_shared<nn::Linear>(784, 128));
//       fc2 = register_module("fc2", std::make_shared<nn::Linear>(128, 10));
//     }
//     Tensor forward(const Tensor& x) override { return fc2->forward(relu(fc1->forward(x))); }
//     std::shared_ptr<nn::Linear> fc1, fc2;
//   };
//
// Note [Parameter slots]
// register_parameter/register_buffer store the tensor in a slot the module owns and return a
// reference to that slot, whose address never changes. Layers bind their public members to it
// (`Tensor& weight`), so `linear->weight` always reads the registered tensor, also after
// to(dtype) or after assigning a new tensor to it. A Kiln tensor cannot change its dtype in place,
// so to(dtype) puts a converted tensor into the slot (still a leaf, still requiring grad, its grad
// converted too). Code that copied the old handle (an optimizer built before to()) keeps the old
// tensor: build optimizers after converting the model, as LibTorch's documentation advises.
#pragma once

#include <concepts>
#include <cstdint>
#include <deque>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/state_dict.h"
#include "kiln/tensor.h"

namespace kiln::nn {

// A registered attribute's value (Module::register_attribute): state that forward() reads and
// kiln::compile guards.
using AttributeValue = std::variant<bool, int64_t, double, std::string>;

// What load_state_dict(dict, /*strict=*/false) could not match (PyTorch's _IncompatibleKeys).
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;     // expected by the module, absent from the dict
  std::vector<std::string> unexpected_keys;  // in the dict, unknown to the module
};

class Module {
 public:
  // `name` is the class name shown by operator<< and in error messages ("Linear"); a module built
  // with the default constructor (as LibTorch's user modules are) is named "Module".
  explicit Module(std::string name);
  Module() : Module("Module") {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }

  // Note [Module identity and version]
  // id() is unique for the life of the process and never reused, unlike an address: a module
  // destroyed and another built in its place have different ids. version() grows whenever the
  // module's registered state changes shape: a parameter, buffer, submodule or attribute
  // registered or a submodule replaced. kiln::compile guards every module it is passed over
  // the whole tree, by id, version, training mode and attribute values (See Note [Module guards]
  // in src/capture/guards.h), so it never reads a slot of a module that changed or died;
  // last_change() says in words what last changed the version (for the recompile reason).
  uint64_t id() const { return id_; }
  uint64_t version() const { return version_; }
  const std::string& last_change() const { return last_change_; }

  // The one-tensor forward that Sequential calls. Modules whose forward takes other arguments
  // (losses, attention) add overloads; the default raises NotImplementedError naming the module.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) {
    check_input_defined(input);
    return forward(input);
  }

  // ---- registration ----
  // Names are non-empty, contain no '.', and are unique among the module's parameters, buffers
  // and submodules (ValueError otherwise).

  // Registers a leaf tensor as a parameter and sets requires_grad on it. An undefined tensor
  // registers an empty slot (None in PyTorch: Linear's bias when bias=false), which the
  // walks below and state_dict() skip. Returns the slot (Note [Parameter slots]).
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  // Registers state that is not trained. persistent=false keeps it out of state_dict().
  Tensor& register_buffer(std::string name, Tensor tensor, bool persistent = true);
  // Registers a submodule; its parameters appear as "<name>.<its name>".
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }
  // A module holder (LibTorch's torch::nn::Linear and the like: kiln/torch/module_holder.h) is
  // registered as the module it holds, and returned as it was passed.
  template <typename Holder>
  requires requires(const Holder& h) { h.ptr(); }
  Holder register_module(std::string name, Holder holder) {
    add_child(std::move(name), holder.ptr());
    return holder;
  }
  // Swaps the registered submodule `name` for `module` (LibTorch's replace_module; PyTorch's
  // `self.fc = new_module`) and returns it, so a member can be rebound in one line:
  // `fc1 = replace_module("fc1", std::make_shared<Linear>(4, 8));`. ValueError if there is no
  // submodule of that name.
  template <typename M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    replace_child(name, module);
    return module;
  }
  template <typename Holder>
  requires requires(const Holder& h) { h.ptr(); }
  Holder replace_module(const std::string& name, Holder holder) {
    replace_child(name, holder.ptr());
    return holder;
  }

  // Attributes: plain (non-tensor) state that forward() reads, made visible to kiln::compile.
  // A value read in forward() from a C++ member is invisible to the compiler and is frozen into
  // the graph; the same value kept as an attribute is guarded by value, like a scalar argument:
  // after set_attribute() a compiled function that was passed this module recompiles (or reuses
  // the entry traced with that value). ValueError for an unknown name, a name taken by a
  // parameter, buffer or submodule, or (set_attribute) a value of another type.
  void register_attribute(std::string name, AttributeValue value);
  void set_attribute(const std::string& name, AttributeValue value);
  const AttributeValue& attribute(const std::string& name) const;
  // This module's own attributes, in registration order.
  const std::vector<std::pair<std::string, AttributeValue>>& attributes() const {
    return attributes_;
  }
  template <typename T>
  const T& attribute_as(const std::string& name) const {
    const AttributeValue& v = attribute(name);
    if (const T* p = std::get_if<T>(&v)) return *p;
    throw_attribute_type_error(name);
  }

  // ---- walks (registration order, the module's own entries before its submodules') ----
  // A tensor or module reachable twice (shared weights) is listed once.

  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  // Every parameter and buffer slot (non-persistent buffers too), by dotted name. The slots'
  // addresses are stable (Note [Parameter slots]); kiln::compile reads them on every call.
  std::vector<std::pair<std::string, const Tensor*>> named_tensor_slots() const;
  std::vector<std::shared_ptr<Module>> children() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  // This module first (name ""), then every descendant, depth first. The pointers do not own.
  std::vector<Module*> modules();
  std::vector<std::pair<std::string, Module*>> named_modules();
  // Calls `fn(name, depth, module)` on this module (name "", depth 0) and then on every
  // submodule (its registered name in its parent), depth first in registration order; a
  // submodule registered twice is visited twice. Allocates nothing (kiln::compile's guards walk
  // it on every call).
  void visit_modules(const std::function<void(const std::string&, int, const Module&)>& fn,
                     const std::string& name = "", int depth = 0) const;

  // Calls `fn` on this module and then on every submodule, depth first in registration order (as
  // LibTorch's Module::apply; a module registered twice is visited once). The name form passes
  // each module's dotted name ("" for this one), e.g. to initialize weights by layer.
  void apply(const std::function<void(Module&)>& fn);
  void apply(const std::function<void(const std::string&, Module&)>& fn);

  // ---- mode, dtype, gradients ----

  // Sets training mode here and in every submodule (Dropout and BatchNorm depend on it).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Converts every floating parameter and buffer, recursively (integer buffers such as
  // BatchNorm's num_batches_tracked keep their dtype). See Note [Parameter slots].
  void to(ScalarType dtype);
  // Kiln's modules live on the CPU: to(Device::CPU) leaves them as they are (LibTorch's
  // `model->to(device)`), any other device raises NotImplementedError. `non_blocking` is accepted
  // for LibTorch's signature; there is nothing to overlap.
  void to(Device device, bool non_blocking = false);
  void to(Device device, ScalarType dtype, bool non_blocking = false);
  // A front end's own device type, such as LibTorch's `model->to(torch::kCPU)`: any type for
  // which argument-dependent lookup finds a `kiln_device_of(device)` giving Kiln's device.
  template <typename DeviceLike>
  requires requires(const DeviceLike& d) {
    { kiln_device_of(d) } -> std::convertible_to<Device>;
  }
  void to(const DeviceLike& device, bool non_blocking = false) {
    to(Device(kiln_device_of(device)), non_blocking);
  }
  template <typename DeviceLike>
  requires requires(const DeviceLike& d) {
    { kiln_device_of(d) } -> std::convertible_to<Device>;
  }
  void to(const DeviceLike& device, ScalarType dtype, bool non_blocking = false) {
    to(Device(kiln_device_of(device)), dtype, non_blocking);
  }

  // Clears the gradients of every parameter (set_to_none) or zeroes them in place.
  void zero_grad(bool set_to_none = true);

  // ---- copying ----

  // Note [Cloning a module]
  // clone() returns a deep copy, as LibTorch's Module::clone: a new module of the same type, built
  // with the same constructor arguments, whose parameters and buffers (non-persistent ones too)
  // are copies of this module's, not shared with it, with the same dtypes and requires_grad, and
  // whose training mode and attributes equal this module's, in every submodule. Gradients are not
  // copied. The copy is a new module to kiln::compile (a new id). Every Kiln layer and container
  // implements it by constructing itself again and calling finish_clone(); a user module derives
  // from torch::nn::Cloneable<NetImpl> (kiln/torch/module_holder.h) or overrides clone() the same
  // way. The default raises NotImplementedError naming the module.
  virtual std::shared_ptr<Module> clone() const;

  // ---- saving ----

  // Parameters and persistent buffers by dotted name, detached and sharing storage with the
  // module (as PyTorch's state_dict).
  StateDict state_dict() const;
  // Copies the dict's tensors into the module's tensors (converting dtype) under NoGradGuard.
  // Shape mismatches raise ShapeError; with strict, missing or unexpected keys raise ValueError;
  // nothing is copied when either is raised. Non-tensor values in the dict are ignored.
  LoadStateDictResult load_state_dict(const StateDict& dict, bool strict = true);

  // ---- printing ----

  // The text inside "Name(...)" on the module's first line, as PyTorch's extra_repr
  // ("in_features=4, out_features=3, bias=True").
  virtual std::string extra_repr() const { return ""; }
  // PyTorch's repr: "Name(extra)" or, with submodules, one indented line per child.
  std::string repr() const;

 protected:
  // The base of a LibTorch Cloneable's copy constructor (See Note [Cloning a module]): a module
  // with `original`'s name and training mode and nothing registered, which the copy's reset()
  // fills.
  struct UnregisteredCopy {};
  Module(UnregisteredCopy, const Module& original);

  // Makes `copy`, freshly constructed with this module's constructor arguments (so it has the
  // same submodules, parameters and buffers by name), a deep copy of this module and returns it.
  // ValueError naming both when the two trees differ in a name or a shape.
  std::shared_ptr<Module> finish_clone(std::shared_ptr<Module> copy) const;

  // ValueError naming this module and `argument` when `input` is an undefined Tensor (See Note
  // [An undefined Tensor] in kiln/tensor.h).
  void check_input_defined(const Tensor& input, std::string_view argument = "input") const;
  // Looks up a registered parameter or buffer slot by name (ValueError if absent).
  Tensor& parameter_slot(const std::string& name);
  Tensor& buffer_slot(const std::string& name);

 private:
  struct Slot {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };

  // Copies `from`'s state into `to` and recursively into their submodules (finish_clone).
  // `copied` maps each tensor of `from` already copied to its copy, so tied weights stay tied.
  static void copy_state(const Module& from, Module& to, const std::string& path,
                         std::map<const TensorImpl*, Tensor>& copied);
  void add_child(std::string name, std::shared_ptr<Module> module);
  void replace_child(const std::string& name, std::shared_ptr<Module> module);
  void changed(std::string what);
  [[noreturn]] void throw_attribute_type_error(const std::string& name) const;
  void check_new_name(const std::string& name, std::string_view what) const;
  enum class SlotKind { Parameter, Buffer };
  // Appends (dotted name, slot) for every defined slot of `kind` of self (and its descendants
  // when recurse). Self is Module or const Module.
  template <typename Self, typename Out>
  static void collect_slots(Self& self, SlotKind kind, bool recurse, bool persistent_only,
                            const std::string& prefix, Out& out);

  std::string name_;
  uint64_t id_;
  uint64_t version_ = 0;
  std::string last_change_;
  bool training_ = true;
  // Deques: push_back never moves existing slots (Note [Parameter slots]).
  std::deque<Slot> parameters_;
  std::deque<Slot> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, AttributeValue>> attributes_;
};

std::ostream& operator<<(std::ostream& os, const Module& module);

}  // namespace kiln::nn
