// fmt support for SymInt: error messages and shape strings print a symbolic size as its expression
// ("s0*4") without guarding, and a concrete one as its integer.
#pragma once

#include <fmt/format.h>

#include <sstream>

#include "kiln/sym_int.h"

template <>
struct fmt::formatter<kiln::SymInt> : fmt::formatter<int64_t> {
  auto format(kiln::SymInt s, format_context& ctx) const -> decltype(ctx.out()) {
    if (s.is_concrete()) return fmt::formatter<int64_t>::format(s.raw(), ctx);
    std::ostringstream os;
    os << s;
    return fmt::format_to(ctx.out(), "{}", os.str());
  }
};
