// Note [Graph text format]
// A graph prints as one line per node and reads back with parse_graph (same ids, same metas, same
// constants), so dumps, tests and patterns can all be written as text:
//
//   %0 : f32[s0, 784] = placeholder("arg0")
//   %1 : f32[512, 784] requires_grad = placeholder("model.fc1.weight")
//   %2 : f32[784, 512]{1, 784} = transpose(%1, 0, 1)
//   %3 : f32[s0, 512] = mm(%0, %2)
//   %4 : f32[2, 3], %5 : i64[2, 3] = max.dim(%6, 1, False)
//   %7 : f32[2s0, 512] = cat([%3, %3], dim=0)
//   return (%3)
//
// Types: a short dtype name, the sizes, then the strides in braces only when they are not the
// contiguous ones, `@offset` only when the storage offset is not 0 (`@(expr)` when symbolic), and
// `requires_grad` when set. Symbolic sizes print as sym::to_string expressions.
// Arguments follow the op's schema: positional up to the first argument that has a default or is
// keyword-only, `name=value` from there on. Constants: ints, floats (always with a '.', an
// exponent, or inf/nan; the shortest text that reads back bit-identical), True/False, None, dtype
// names (float32, int64: the long names, so they never collide with a symbol such as u8), devices
// (cpu, meta), double-quoted strings, int lists `[2, s0]`, value lists `[%1, None]`. A Scalar
// prints like the number it holds; its kind (int, float, bool) is kept by the literal's form.
//
// A call of a higher-order op is followed by its subgraphs (Note [Subgraphs of a higher-order op]
// in graph.h), each a block that names its role and holds a whole graph, indented, with its own
// value ids:
//
//   %3 : f32[4] = cond(%2, [%0])
//     true_fn {
//       %0 : f32[4] = placeholder("operand0")
//       %1 : f32[4] = sin(%0)
//       return (%1)
//     }
//     false_fn {
//       ...
//     }
#include "src/graph/graph.h"
#include "src/graph/schema.h"
#include "src/graph/text.h"

namespace kiln::graph {
namespace {

std::string join_dims(const SymDimVector& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += text::sym_int(dims[i]);
  }
  return out;
}

std::string value_list(const std::vector<Value*>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += values[i] == nullptr ? "None" : values[i]->name();
  }
  return out + "]";
}

std::string arg_to_string(const Arg& a) {
  switch (a.kind()) {
    case Arg::Kind::Value:
      return a.as_value()->name();
    case Arg::Kind::List:
      return value_list(a.as_list());
    case Arg::Kind::Constant:
      return constant_to_string(a.as_constant());
  }
  return "?";
}

std::string outputs_to_string(std::span<Value* const> outputs) {
  std::string out;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i > 0) out += ", ";
    out += outputs[i]->name() + " : " + to_string(outputs[i]->meta());
  }
  return out;
}

}  // namespace

std::string to_string(const TensorMeta& meta) {
  std::string out =
      fmt::format("{}[{}]", text::short_dtype_name(meta.dtype), join_dims(meta.sizes));
  if (!meta.has_contiguous_strides()) out += fmt::format("{{{}}}", join_dims(meta.strides));
  if (!same(meta.offset, 0)) {
    const std::string offset = text::sym_int(meta.offset);
    out += meta.offset.is_symbolic() ? fmt::format("@({})", offset) : fmt::format("@{}", offset);
  }
  if (meta.wrapped_number) out += " wrapped";
  if (meta.requires_grad) out += " requires_grad";
  return out;
}

std::string constant_to_string(const IValue& c) {
  if (c.is_none()) return "None";
  if (c.is_bool()) return c.to_bool() ? "True" : "False";
  if (c.is_int()) return text::sym_int(c.to_sym_int());
  if (c.is_double()) return text::float_literal(c.to_double());
  if (c.is_scalar()) {
    const Scalar s = c.scalar();
    switch (s.kind()) {
      case Scalar::Kind::Bool:
        return s.to_bool() ? "True" : "False";
      case Scalar::Kind::Int:  // never symbolic (Scalar has no SymInt constructor)
        return std::to_string(s.to_int64());
      case Scalar::Kind::UInt:
        return std::to_string(s.to_uint64());
      case Scalar::Kind::Double:
        return text::float_literal(s.to_double());
    }
  }
  if (c.is_int_list()) {
    std::string out = "[";
    const IntArrayRef ints = raw_words(c);
    for (size_t i = 0; i < ints.size(); ++i) {
      if (i > 0) out += ", ";
      out += text::sym_int(SymInt::from_raw(ints[i]));
    }
    return out + "]";
  }
  if (c.is_dtype()) return std::string(dtype_name(c.dtype()));
  if (c.is_device()) return c.device() == Device::Meta ? "meta" : "cpu";
  if (c.is_string()) return text::quoted(c.string());
  return fmt::format("<{}>",
                     c.type_name());  // tensors are never constants (Graph::add_call refuses them)
}

std::string to_string(const Node& node) {
  switch (node.kind()) {
    case NodeKind::Placeholder:
      return fmt::format("{} = placeholder({})", outputs_to_string(node.outputs()),
                         text::quoted(node.source()));
    case NodeKind::Output: {
      std::string out = "return (";
      const std::vector<Value*>& values = node.args()[0].as_list();
      for (size_t i = 0; i < values.size(); ++i)
        out += fmt::format("{}{}", i > 0 ? ", " : "", values[i]->name());
      return out + ")";
    }
    case NodeKind::Call:
      break;
  }
  const OpDef& def = node.op_def();
  const Schema& schema = schema_of(def);
  std::string out = outputs_to_string(node.outputs());
  out += out.empty() ? "" : " = ";
  out += def.name + "(";
  bool keywords = false;
  for (size_t i = 0; i < node.args().size(); ++i) {
    if (i > 0) out += ", ";
    // Past the schema's arguments (a broken node the verifier will report) stay positional.
    if (i < schema.args.size() && (keywords || schema.args[i].printed_as_keyword())) {
      keywords = true;
      out += schema.args[i].name + "=";
    }
    out += arg_to_string(node.args()[i]);
  }
  out += ")";
  // Note [Grad mode of a node]
  if (node.grad_mode() == Node::GradMode::Disabled) out += "  # no_grad";
  if (node.grad_mode() == Node::GradMode::Enabled) out += "  # enable_grad";
  return out;
}

std::string to_string(const Graph& g) {
  std::string out;
  for (const Node* n : g.nodes()) {
    out += to_string(*n) + "\n";
    // Note [Subgraphs of a higher-order op]: each body as an indented block after the call.
    for (const Subgraph& sub : n->subgraphs()) {
      out += "  " + sub.name + " {\n";
      const std::string body = to_string(*sub.graph);
      size_t start = 0;
      while (start < body.size()) {
        const size_t end = body.find('\n', start);
        out += "    " + body.substr(start, end - start) + "\n";
        start = end + 1;
      }
      out += "  }\n";
    }
  }
  return out;
}

}  // namespace kiln::graph
