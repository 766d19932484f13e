#include "src/graph/text.h"

#include <charconv>
#include <cmath>

#include "kiln/error.h"
#include "src/sym/expr.h"

namespace kiln::graph::text {
namespace {

constexpr std::pair<ScalarType, std::string_view> kShortNames[] = {
    {kBool, "b8"},       {kUInt8, "u8"},    {kUInt16, "u16"}, {kUInt32, "u32"}, {kUInt64, "u64"},
    {kInt8, "i8"},       {kInt16, "i16"},   {kInt32, "i32"},  {kInt64, "i64"},  {kFloat16, "f16"},
    {kBFloat16, "bf16"}, {kFloat32, "f32"}, {kFloat64, "f64"}};

}  // namespace

std::string_view short_dtype_name(ScalarType t) {
  for (const auto& [dtype, name] : kShortNames)
    if (dtype == t) return name;
  return "?";
}

std::optional<ScalarType> dtype_from_short_name(std::string_view name) {
  for (const auto& [dtype, short_name] : kShortNames)
    if (short_name == name) return dtype;
  return std::nullopt;
}

std::string sym_int(SymInt s) {
  if (!s.is_symbolic()) return std::to_string(s.raw());
  return sym::to_string(s.expr());
}

SymInt parse_sym_int(std::string_view t) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec == std::errc() && end == t.data() + t.size()) {
    KILN_CHECK(value > SymInt::kSymbolicTagMax, ValueError,
               "{} is below -2^62, the range reserved for symbolic sizes (Note [SymInt "
               "representation])",
               t);
    return SymInt(value);
  }
  const sym::ExprPtr e = sym::parse(t);
  KILN_CHECK(!e->is_bool(), ValueError,
             "expected a size or integer expression, got the condition '{}'", t);
  return SymInt::from_expr(e);
}

std::string float_literal(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);  // shortest text that reads back identical
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace kiln::graph::text
