// OpDef: the one declarative entry of an op in the op table (DESIGN.md section 3). Every op
// family in src/ops/ registers its entries; tests, `kiln ops --json`, the tracer and the
// lowering all iterate the same table.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <string_view>

#include "kiln/dispatch_key.h"
#include "src/dispatch/ivalue.h"

namespace kiln {

using OpId = uint32_t;
struct OpDef;
class OpCall;

// Meta: validates the arguments and creates the outputs (dtype, sizes, strides) with
// call.set_output(...), or sets views/aliases directly. Runs for every backend.
using MetaFn = void (*)(OpCall&);
// Kernel: fills the outputs created by meta (or, for ops with data-dependent output shapes,
// creates them).
using KernelFn = void (*)(OpCall&);
// Composite: implements the op with other ops; runs above every dispatch key (like PyTorch's
// CompositeImplicitAutograd), so autograd and tracing see the ops it calls.
using CompositeFn = void (*)(OpCall&);
// A handler for a non-backend dispatch key (Autograd, Trace, ...). `keys` is the key set the
// call is dispatching on; handlers redispatch with their own key removed.
using KeyHandler =
    std::function<void(const OpDef&, Stack& args, Stack& outputs, DispatchKeySet keys)>;

enum OpTag : uint32_t {
  kTagNone = 0,
  kTagView = 1u << 0,           // outputs alias the first input's storage
  kTagInplace = 1u << 1,        // mutates args[0] and returns it
  kTagRandom = 1u << 2,         // draws from a Generator
  kTagDynamicOutput = 1u << 3,  // output shape depends on data (nonzero); kernel allocates
  kTagFactory = 1u << 4,        // no tensor inputs; a `device` argument picks the backend
  kTagPointwise = 1u << 5,
  kTagReduction = 1u << 6,
  kTagNondifferentiable = 1u << 7,  // integer/bool outputs only, no derivative expected
  kTagNotTraceable = 1u << 8,       // kiln::compile runs it eagerly between graphs (a graph break)
  kTagHigherOrder = 1u << 9,        // takes subgraphs (cond, while_loop): runs only from a graph
  // Defines an unbacked symbol from its output's value (_local_scalar_dense, Note [Scalar outputs
  // in a graph] in src/ops/scalar_output.cpp): a graph keeps it even when no value edge reads it.
  kTagDefinesSymbol = 1u << 10,
};

struct OpDef {
  std::string name;
  std::string schema;  // "add(Tensor self, Tensor other, Scalar alpha=1) -> Tensor"
  std::string family;  // "pointwise", "reduce", ... (for docs and the ops listing)
  MetaFn meta = nullptr;
  KernelFn cpu = nullptr;
  CompositeFn composite = nullptr;
  DTypeSet dtypes = dtypes::kAll;  // dtypes the CPU kernel accepts (of the main input)
  uint32_t tags = kTagNone;
  int device_arg = -1;                                  // factories: index of the Device argument
  std::array<KeyHandler, kNumDispatchKeys> handlers{};  // per-op override of a key's fallback
  // Filled by later stages (src/autograd derivative table, src/lower decompositions).
  bool has_derivative = false;
  bool has_decomposition = false;

  OpId id = 0;
  bool has_tag(OpTag t) const { return (tags & t) != 0; }
};

}  // namespace kiln
