// JSON parsing for file headers that may be corrupt or hostile.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace kiln::util {

// Parses `text`, refusing documents nested deeper than `max_depth` levels (the top-level value
// is level 0). See Note [Bounded JSON nesting]. Throws ValueError with a message that completes
// "the <thing> ...": "is not valid JSON: ..." or "is nested deeper than N levels"; callers say
// which file and which thing.
nlohmann::json parse_json_bounded(std::string_view text, int max_depth);

}  // namespace kiln::util
