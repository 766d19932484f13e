// The parsed form of an op's schema string ("add(Tensor self, Tensor other, Scalar alpha=1) ->
// Tensor"): argument names, types and defaults. The printer names keyword arguments with it, the
// parser maps keywords and types back, the verifier checks arity. Parsed once per op and cached.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/dispatch/op_def.h"

namespace kiln::graph {

struct SchemaArg {
  std::string name;
  std::string type;  // without alias annotations: "Tensor", "Tensor?[]", "SymInt[2]", "Scalar?"
  std::optional<std::string> default_text;  // "1", "None", "[]", "'mean'"
  bool kwarg_only = false;                  // after `*`
  bool mutated = false;                     // `Tensor(a!)`

  bool optional() const { return !type.empty() && type.back() == '?'; }
  bool is_tensor() const { return type == "Tensor" || type == "Tensor?"; }
  bool is_tensor_list() const { return type.starts_with("Tensor") && type.ends_with("[]"); }
  bool is_scalar() const { return type == "Scalar" || type == "Scalar?"; }
  bool is_int_list() const;
  // Printed as `name=value`: arguments with a default or after `*`.
  bool printed_as_keyword() const { return kwarg_only || default_text.has_value(); }
};

struct Schema {
  std::string name;
  std::vector<SchemaArg> args;
  int num_returns = 1;        // tensors returned (when !returns_list)
  bool returns_list = false;  // `-> Tensor[]`: any number of outputs
  bool mutates_an_argument = false;
  int num_required() const;  // arguments without a default
  // Index of the argument called `name`, or -1.
  int index_of(std::string_view name) const;
};

// Parses a schema string; throws ValueError naming the op on malformed text.
Schema parse_schema(std::string_view text);
// The cached schema of an op of the op table.
const Schema& schema_of(const OpDef& op);
// An argument's default ("None", "1", "1e-05", "False", "'mean'", "[]") as the constant the tracer
// would have recorded; ValueError naming `op` when the text cannot be read.
IValue default_value(const SchemaArg& arg, std::string_view op);

}  // namespace kiln::graph
