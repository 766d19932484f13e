#include "src/graph/schema.h"

#include <cstdlib>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "src/dispatch/dispatcher.h"

namespace kiln::graph {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Splits at commas outside brackets, parentheses and quotes.
std::vector<std::string_view> split_top_level(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string_view last = trim(s.substr(start));
  if (!last.empty() || !parts.empty()) parts.push_back(last);
  return parts;
}

// "Tensor(a!)?" -> type "Tensor?", mutated; "Tensor(a -> *)" -> "Tensor".
std::string strip_alias(std::string_view type, bool* mutated) {
  std::string out;
  size_t i = 0;
  while (i < type.size()) {
    if (type[i] == '(') {
      const size_t close = type.find(')', i);
      if (close == std::string_view::npos) break;
      if (type.substr(i, close - i).find('!') != std::string_view::npos) *mutated = true;
      i = close + 1;
      continue;
    }
    out += type[i++];
  }
  return out;
}

int count_returns(std::string_view ret, bool* list) {
  ret = trim(ret);
  if (ret.starts_with("(")) {
    const std::string_view inner = trim(ret.substr(1, ret.size() - 2));
    return inner.empty() ? 0 : static_cast<int>(split_top_level(inner).size());
  }
  bool ignored = false;
  if (strip_alias(ret, &ignored).ends_with("[]")) *list = true;
  return 1;
}

}  // namespace

bool SchemaArg::is_int_list() const {
  return (type.starts_with("int[") || type.starts_with("SymInt[")) &&
         type.find(']') != std::string::npos;
}

int Schema::num_required() const {
  int n = 0;
  for (const SchemaArg& a : args) n += a.default_text.has_value() ? 0 : 1;
  return n;
}

int Schema::index_of(std::string_view arg_name) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == arg_name) return static_cast<int>(i);
  return -1;
}

Schema parse_schema(std::string_view text) {
  const size_t open = text.find('(');
  const size_t arrow = text.rfind("->");
  KILN_CHECK(open != std::string_view::npos && arrow != std::string_view::npos && arrow > open,
             ValueError, "malformed op schema '{}': expected 'name(args) -> returns'", text);
  const size_t close = text.rfind(')', arrow);
  KILN_CHECK(close != std::string_view::npos && close > open, ValueError,
             "malformed op schema '{}': no ')' before '->'", text);
  Schema schema;
  schema.name = std::string(trim(text.substr(0, open)));
  bool kwarg_only = false;
  for (std::string_view part : split_top_level(text.substr(open + 1, close - open - 1))) {
    if (part == "*") {
      kwarg_only = true;
      continue;
    }
    SchemaArg arg;
    arg.kwarg_only = kwarg_only;
    const size_t eq = part.find('=');
    std::string_view decl = part;
    if (eq != std::string_view::npos) {
      arg.default_text = std::string(trim(part.substr(eq + 1)));
      decl = trim(part.substr(0, eq));
    }
    // The name is the last word; alias annotations may contain spaces ("Tensor(a -> *) self").
    const size_t space = decl.rfind(' ');
    KILN_CHECK(space != std::string_view::npos, ValueError,
               "malformed op schema '{}': argument '{}' has no name", text, part);
    arg.name = std::string(decl.substr(space + 1));
    arg.type = strip_alias(trim(decl.substr(0, space)), &arg.mutated);
    schema.mutates_an_argument |= arg.mutated;
    schema.args.push_back(std::move(arg));
  }
  schema.num_returns = count_returns(text.substr(arrow + 2), &schema.returns_list);
  return schema;
}

const Schema& schema_of(const OpDef& op) {
  static std::mutex mutex;
  static std::unordered_map<const OpDef*, std::unique_ptr<Schema>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Schema>& slot = cache[&op];
  if (!slot) slot = std::make_unique<Schema>(parse_schema(op.schema));
  return *slot;
}

IValue default_value(const SchemaArg& arg, std::string_view op) {
  KILN_CHECK(arg.default_text.has_value(), ValueError, "{}: argument '{}' has no default", op,
             arg.name);
  const std::string& t = *arg.default_text;
  if (t == "None") return IValue();
  if (t == "True" || t == "true") return IValue(true);
  if (t == "False" || t == "false") return IValue(false);
  if (t == "[]") return IValue(DimVector{});
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"'))
    return IValue(std::string(t.substr(1, t.size() - 2)));
  char* end = nullptr;
  if (t.find_first_of(".eEn") == std::string::npos) {
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (end != nullptr && *end == '\0') return IValue(static_cast<int64_t>(v));
  }
  const double d = std::strtod(t.c_str(), &end);
  KILN_CHECK(end != nullptr && *end == '\0', ValueError,
             "{}: cannot read the default '{}' of argument '{}'", op, t, arg.name);
  return IValue(d);
}

}  // namespace kiln::graph
