#include "src/util/json_parse.h"

#include "kiln/error.h"

namespace kiln::util {

// Note [Bounded JSON nesting]
// nlohmann::json parses iteratively, but destroying and printing a value recurse once per level,
// so a header of a million '[' crashes the process by stack overflow long after parsing succeeded.
// The headers Kiln reads are shallow (safetensors: object > tensor entry > shape array), so the
// parser callback stops anything deeper while it is still being read.
nlohmann::json parse_json_bounded(std::string_view text, int max_depth) {
  const nlohmann::json::parser_callback_t limit_depth =
      [max_depth](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        KILN_CHECK(depth <= max_depth, ValueError, "is nested deeper than {} levels", max_depth);
        return true;
      };
  try {
    return nlohmann::json::parse(text, limit_depth);
  } catch (const nlohmann::json::parse_error& e) {
    throw ValueError(fmt::format("is not valid JSON: {}", e.what()));
  }
}

}  // namespace kiln::util
