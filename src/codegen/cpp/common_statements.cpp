// See Note [Common statements of a fused body] in common_statements.h.
#include "src/codegen/cpp/common_statements.h"

#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

namespace kiln::codegen {
namespace {

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `text` with every identifier found in `renames` replaced.
std::string renamed(std::string_view text,
                    const std::unordered_map<std::string, std::string>& renames) {
  if (renames.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (!is_identifier_char(text[i]) || (i > 0 && is_identifier_char(text[i - 1]))) {
      out += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size() && is_identifier_char(text[j])) ++j;
    const std::string token(text.substr(i, j - i));
    const auto it = renames.find(token);
    out += it == renames.end() ? token : it->second;
    i = j;
  }
  return out;
}

std::set<std::string> identifiers(std::string_view text) {
  std::set<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (!is_identifier_char(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && is_identifier_char(text[j])) ++j;
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) out.emplace(text.substr(i, j - i));
    i = j;
  }
  return out;
}

struct Definition {
  std::string key;  // "T expr"
  std::string name;
};

// `const T name = expr;` split into its key and name.
std::optional<Definition> definition(const std::string& statement) {
  constexpr std::string_view kConst = "const ";
  if (statement.rfind(kConst, 0) != 0 || statement.empty() || statement.back() != ';')
    return std::nullopt;
  const size_t type_end = statement.find(' ', kConst.size());
  if (type_end == std::string::npos) return std::nullopt;
  const size_t name_end = statement.find(" = ", type_end + 1);
  if (name_end == std::string::npos) return std::nullopt;
  const std::string name = statement.substr(type_end + 1, name_end - type_end - 1);
  for (char c : name)
    if (!is_identifier_char(c)) return std::nullopt;
  std::string type = statement.substr(kConst.size(), type_end - kConst.size());
  std::string expr = statement.substr(name_end + 3, statement.size() - name_end - 4);
  return Definition{type + " " + expr, name};
}

// The buffer a store statement writes, as CppPrinter::store prints one: `buf[...] = v;`,
// `kiln_storeu(buf + ..., v);`, `kiln_storeu_n(buf + ..., v, n);` or
// `kiln_stream_if(condition, buf + ..., v);`. None for any other statement.
std::optional<std::string> stored_buffer(const std::string& statement) {
  size_t start = 0;
  if (statement.rfind("kiln_stream_if(", 0) == 0) {
    start = statement.find(", ");
    if (start == std::string::npos) return std::nullopt;
    start += 2;
  } else if (statement.rfind("kiln_storeu(", 0) == 0 || statement.rfind("kiln_storeu_n(", 0) == 0) {
    start = statement.find('(') + 1;
  }
  size_t end = start;
  while (end < statement.size() && is_identifier_char(statement[end])) ++end;
  if (end == start) return std::nullopt;
  if (start == 0 && (end >= statement.size() || statement[end] != '[')) return std::nullopt;
  return statement.substr(start, end - start);
}

}  // namespace

void merge_common_statements(std::vector<std::string>& body,
                             const std::vector<std::string>& known) {
  std::map<std::string, std::string> by_key;  // key -> the name that holds it
  std::unordered_map<std::string, std::string> renames;
  for (const std::string& s : known)
    if (const auto d = definition(s)) by_key.try_emplace(d->key, d->name);
  std::vector<std::string> out;
  out.reserve(body.size());
  for (const std::string& original : body) {
    std::string statement = renamed(original, renames);
    if (const auto d = definition(statement)) {
      const auto [it, fresh] = by_key.try_emplace(d->key, d->name);
      if (!fresh) {
        renames[d->name] = it->second;
        continue;
      }
    } else if (const auto buffer = stored_buffer(statement)) {
      for (auto it = by_key.begin(); it != by_key.end();)
        it = identifiers(it->first).count(*buffer) ? by_key.erase(it) : std::next(it);
    } else {
      by_key.clear();
    }
    out.push_back(std::move(statement));
  }
  body = std::move(out);
}

}  // namespace kiln::codegen
