// Pieces of the graph text format shared by the printer and the parser (Note [Graph text format]
// in printer.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kiln/dtype.h"
#include "kiln/sym_int.h"

namespace kiln::graph::text {

// "f32", "i64", "b8", ... (the short names of tensor types).
std::string_view short_dtype_name(ScalarType t);
std::optional<ScalarType> dtype_from_short_name(std::string_view name);
// A SymInt as text: "784", or its expression "s0*128 + 4" (sym::to_string).
std::string sym_int(SymInt s);
// Reads what sym_int printed; throws ValueError (without a position; the parser adds it).
SymInt parse_sym_int(std::string_view text);
// A double that reads back bit-identical, always recognizable as a float: "1.0", "0.1", "1e+20",
// "inf", "-inf", "nan".
std::string float_literal(double d);
// A double-quoted string with C escapes.
std::string quoted(std::string_view s);

}  // namespace kiln::graph::text
