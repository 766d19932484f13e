// Reads the graph text format (Note [Graph text format] in printer.cpp) back into a Graph. The
// parser checks syntax, names (ops, values, keywords) and argument kinds; everything else (arity,
// metas, ordering of passes' output) is the verifier's job, so a broken graph can be written as
// text to test the verifier.
#include <cctype>
#include <charconv>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>

#include "src/graph/graph.h"
#include "src/graph/schema.h"
#include "src/graph/text.h"

namespace kiln::graph {
namespace {

// Inside LineParser: throws a ValueError at `column` of the current line.
#define KILN_CHECK_AT(cond, column, ...)                  \
  do {                                                    \
    if (!(cond)) error(column, fmt::format(__VA_ARGS__)); \
  } while (0)

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// One parsed argument before it becomes an Arg: a value, a list, or a constant.
struct Element {
  enum class Kind { Value, List, Constant } kind = Kind::Constant;
  Value* value = nullptr;
  std::vector<Element> list;
  IValue constant;
  size_t column = 0;
};

class LineParser {
 public:
  LineParser(std::string_view line, int line_number, Graph& g,
             std::unordered_map<int, Value*>& values)
      : line_(line), line_number_(line_number), g_(g), values_(values) {}

  // Returns true when the line was a `return`.
  bool parse_statement() {
    skip_space();
    if (starts_with_word("return")) {
      parse_return();
      return true;
    }
    std::vector<std::pair<int, TensorMeta>> defs;
    std::vector<size_t> def_columns;
    if (peek() == '%') {
      while (true) {
        def_columns.push_back(pos_);
        const int id = parse_value_id();
        KILN_CHECK_AT(values_.count(id) == 0, def_columns.back(), "%{} is defined twice", id);
        expect(':');
        defs.emplace_back(id, parse_type());
        skip_space();
        if (!accept(',')) break;
      }
      expect('=');
    }
    skip_space();
    const size_t name_column = pos_;
    const std::string name = parse_ident("an op name or 'placeholder'");
    std::vector<int> ids;
    for (const auto& d : defs) ids.push_back(d.first);
    if (name == "placeholder") {
      if (defs.size() != 1) error(name_column, "a placeholder defines exactly one value");
      // Every value defined so far is a placeholder's, unless a call came before (O(1) check).
      if (values_.size() != g_.placeholders().size())
        error(name_column, "placeholders must come before every call");
      expect('(');
      skip_space();
      std::string source = parse_string();
      expect(')');
      g_.set_next_value_ids(ids);
      values_[ids[0]] = g_.add_placeholder(std::move(source), std::move(defs[0].second));
    } else {
      const OpDef* op = OpRegistry::instance().find(name);
      if (op == nullptr)
        error(name_column, fmt::format("unknown op '{}'; `kiln ops` lists the op table", name));
      std::vector<Arg> args = parse_call_args(*op);
      std::vector<TensorMeta> metas;
      for (auto& d : defs) metas.push_back(std::move(d.second));
      g_.set_next_value_ids(ids);
      std::vector<Value*> outs = g_.add_call(op->id, std::move(args), std::move(metas));
      for (size_t i = 0; i < outs.size(); ++i) values_[ids[i]] = outs[i];
      call_ = outs.empty() ? nullptr : outs[0]->producer();
      // Note [Grad mode of a node]: the trailing comment carries the node's grad mode.
      skip_space();
      const std::string_view rest = line_.substr(pos_);
      if (rest == "# no_grad") outs.at(0)->producer()->set_grad_mode(Node::GradMode::Disabled);
      if (rest == "# enable_grad") outs.at(0)->producer()->set_grad_mode(Node::GradMode::Enabled);
    }
    expect_end();
    return false;
  }

  // The call the statement added (nullptr for a placeholder or a return).
  Node* call() const { return call_; }

 private:
  // ---- errors ----
  [[noreturn]] void error(size_t column, const std::string& what) const {
    throw ValueError(fmt::format("parse_graph: line {}:{}: {}\n  {}\n  {}^", line_number_,
                                 column + 1, what, line_, std::string(column, ' ')));
  }

  // ---- lexing ----
  char peek() const { return pos_ < line_.size() ? line_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < line_.size() && std::isspace(static_cast<unsigned char>(line_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c)
      error(pos_, fmt::format("expected '{}' but found {}", c,
                              pos_ < line_.size() ? fmt::format("'{}'", line_[pos_])
                                                  : "the end of the line"));
    ++pos_;
  }
  // Between the elements of a list that ends with `close`.
  void expect_separator(char close) {
    skip_space();
    if (peek() != ',')
      error(pos_, fmt::format("expected ',' or '{}' but found {}", close,
                              pos_ < line_.size() ? fmt::format("'{}'", line_[pos_])
                                                  : "the end of the line"));
    ++pos_;
  }
  void expect_end() {
    skip_space();
    if (pos_ < line_.size() && line_[pos_] != '#')
      error(pos_, "unexpected text after the statement");
  }
  bool starts_with_word(std::string_view word) const {
    return line_.substr(pos_).starts_with(word) &&
           (pos_ + word.size() >= line_.size() || !is_ident_char(line_[pos_ + word.size()]));
  }
  std::string parse_ident(std::string_view what) {
    skip_space();
    const size_t start = pos_;
    if (!is_ident_start(peek())) error(pos_, fmt::format("expected {}", what));
    while (pos_ < line_.size() && is_ident_char(line_[pos_])) ++pos_;
    return std::string(line_.substr(start, pos_ - start));
  }
  int parse_value_id() {
    skip_space();
    const size_t start = pos_;
    if (peek() != '%') error(pos_, "expected a value such as %3");
    ++pos_;
    int id = -1;
    auto [end, ec] = std::from_chars(line_.data() + pos_, line_.data() + line_.size(), id);
    if (ec != std::errc() || id < 0) error(start, "expected a value such as %3");
    pos_ = static_cast<size_t>(end - line_.data());
    return id;
  }
  Value* parse_value_use() {
    const size_t start = pos_;
    const int id = parse_value_id();
    auto it = values_.find(id);
    KILN_CHECK_AT(it != values_.end(), start, "%{} is used but not defined above", id);
    return it->second;
  }
  std::string parse_string() {
    const size_t start = pos_;
    const char quote = peek();
    if (quote != '"' && quote != '\'') error(pos_, "expected a quoted string");
    ++pos_;
    std::string out;
    while (pos_ < line_.size() && line_[pos_] != quote) {
      char c = line_[pos_++];
      if (c == '\\' && pos_ < line_.size()) {
        const char e = line_[pos_++];
        if (e == 'n')
          c = '\n';
        else if (e == 't')
          c = '\t';
        else if (e == 'x' && pos_ + 2 <= line_.size()) {
          unsigned v = 0;
          auto [end, ec] = std::from_chars(line_.data() + pos_, line_.data() + pos_ + 2, v, 16);
          if (ec != std::errc() || end != line_.data() + pos_ + 2)
            error(pos_ - 2, "bad \\x escape");
          c = static_cast<char>(v);
          pos_ += 2;
        } else
          c = e;
      }
      out += c;
    }
    if (pos_ >= line_.size()) error(start, "unterminated string");
    ++pos_;
    return out;
  }
  // The raw text of one element: up to a ',' or a closing bracket outside parentheses.
  std::string_view raw_element() {
    skip_space();
    const size_t start = pos_;
    int depth = 0;
    while (pos_ < line_.size()) {
      const char c = line_[pos_];
      if (c == '(') ++depth;
      if ((c == ')' || c == ']' || c == '}' || c == ',') && depth == 0) break;
      if (c == ')') --depth;
      ++pos_;
    }
    return trim(line_.substr(start, pos_ - start));
  }
  SymInt parse_sym(std::string_view raw, size_t column) {
    if (raw.empty()) error(column, "expected a size");
    try {
      return text::parse_sym_int(raw);
    } catch (const Error& e) {
      error(column, e.what());
    }
  }

  // ---- types ----
  SymDimVector parse_dims(char close) {
    SymDimVector dims;
    skip_space();
    if (accept(close)) return dims;
    while (true) {
      skip_space();
      const size_t column = pos_;
      dims.push_back(parse_sym(raw_element(), column));
      if (accept(close)) return dims;
      expect_separator(close);
    }
  }
  TensorMeta parse_type() {
    skip_space();
    const size_t column = pos_;
    const std::string dtype_name = parse_ident("a dtype such as f32");
    const std::optional<ScalarType> dtype = text::dtype_from_short_name(dtype_name);
    KILN_CHECK_AT(
        dtype.has_value(), column,
        "unknown dtype '{}' (expected one of b8 u8 u16 u32 u64 i8 i16 i32 i64 f16 bf16 f32 f64)",
        dtype_name);
    expect('[');
    TensorMeta meta;
    meta.dtype = *dtype;
    meta.sizes = parse_dims(']');
    if (peek() == '{') {
      ++pos_;
      meta.strides = parse_dims('}');
      KILN_CHECK_AT(meta.strides.size() == meta.sizes.size(), column, "{} strides for {} sizes",
                    meta.strides.size(), meta.sizes.size());
    } else {
      meta.strides = TensorMeta::contiguous_strides(meta.sizes);
    }
    if (peek() == '@') {
      ++pos_;
      const size_t offset_column = pos_;
      if (accept('(')) {
        meta.offset = parse_sym(raw_element(), offset_column);
        expect(')');
      } else {
        const size_t start = pos_;
        while (pos_ < line_.size() &&
               (std::isalnum(static_cast<unsigned char>(line_[pos_])) || line_[pos_] == '-'))
          ++pos_;
        meta.offset = parse_sym(line_.substr(start, pos_ - start), offset_column);
      }
    }
    skip_space();
    if (starts_with_word("wrapped")) {
      pos_ += std::string_view("wrapped").size();
      meta.wrapped_number = true;
      skip_space();
    }
    if (starts_with_word("requires_grad")) {
      pos_ += std::string_view("requires_grad").size();
      meta.requires_grad = true;
    }
    return meta;
  }

  // ---- arguments ----
  Element parse_element() {
    skip_space();
    Element e;
    e.column = pos_;
    if (peek() == '%') {
      e.kind = Element::Kind::Value;
      e.value = parse_value_use();
    } else if (peek() == '[') {
      ++pos_;
      e.kind = Element::Kind::List;
      if (!accept(']')) {
        while (true) {
          e.list.push_back(parse_element());
          if (accept(']')) break;
          expect_separator(']');
        }
      }
    } else if (peek() == '"' || peek() == '\'') {
      e.constant = IValue(parse_string());
    } else {
      e.constant = parse_literal(raw_element(), e.column);
    }
    return e;
  }

  IValue parse_literal(std::string_view raw, size_t column) {
    if (raw.empty()) error(column, "expected an argument");
    if (raw == "None") return IValue();
    if (raw == "True") return IValue(true);
    if (raw == "False") return IValue(false);
    if (raw == "inf") return IValue(std::numeric_limits<double>::infinity());
    if (raw == "-inf") return IValue(-std::numeric_limits<double>::infinity());
    if (raw == "nan") return IValue(std::numeric_limits<double>::quiet_NaN());
    if (raw == "cpu") return IValue(Device::CPU);
    if (raw == "meta") return IValue(Device::Meta);
    for (ScalarType t : kAllScalarTypes)
      if (raw == dtype_name(t)) return IValue(t);
    const char* begin = raw.data();
    const char* end = raw.data() + raw.size();
    int64_t i = 0;
    if (auto [p, ec] = std::from_chars(begin, end, i); ec == std::errc() && p == end) {
      // Below -2^62 an int word would read as a symbolic SymInt: only a Scalar may hold it.
      return i > SymInt::kSymbolicTagMax ? IValue(i) : IValue(Scalar(i));
    }
    uint64_t u = 0;
    if (auto [p, ec] = std::from_chars(begin, end, u); ec == std::errc() && p == end)
      return IValue(Scalar(u));
    if (raw.find_first_of(".eE") != std::string_view::npos) {
      double d = 0;
      if (auto [p, ec] = std::from_chars(begin, end, d); ec == std::errc() && p == end)
        return IValue(d);
    }
    return IValue(parse_sym(raw, column).raw());
  }

  // An element as the argument of schema type `type` (nullptr: past the schema's arguments).
  Arg to_arg(Element& e, const SchemaArg* type) {
    switch (e.kind) {
      case Element::Kind::Value:
        return Arg::value(e.value);
      case Element::Kind::List: {
        bool values = type != nullptr && type->is_tensor_list();
        for (const Element& x : e.list) values |= x.kind == Element::Kind::Value;
        if (values) {
          std::vector<Value*> list;
          for (const Element& x : e.list) {
            const bool none = x.kind == Element::Kind::Constant && x.constant.is_none();
            KILN_CHECK_AT(x.kind == Element::Kind::Value || none, x.column,
                          "a list of values may only hold values and None");
            list.push_back(x.value);
          }
          return Arg::list(std::move(list));
        }
        DimVector ints;
        for (const Element& x : e.list) {
          KILN_CHECK_AT(x.kind == Element::Kind::Constant && x.constant.is_int(), x.column,
                        "an int list may only hold integers and sizes");
          ints.push_back(x.constant.to_sym_int().raw());
        }
        return Arg::constant(IValue(std::move(ints)));
      }
      case Element::Kind::Constant:
        break;
    }
    IValue& c = e.constant;
    if (type != nullptr && type->is_scalar() && (c.is_int() || c.is_double() || c.is_bool())) {
      // A symbolic size as a Scalar (arange's end over x.size(0)) stays a SymInt word, as the
      // tracer recorded it; whoever runs the graph reads the symbol's value.
      if (c.is_int() && c.to_sym_int().is_symbolic()) return Arg::constant(std::move(c));
      return Arg::constant(IValue(c.scalar()));
    }
    const bool int_type =
        type != nullptr && (type->type.starts_with("int") || type->type.starts_with("SymInt"));
    KILN_CHECK_AT(!(int_type && c.is_scalar()), e.column,
                  "{} is out of range for an int argument (values below -2^62 are reserved for "
                  "symbolic sizes)",
                  constant_to_string(c));
    return Arg::constant(std::move(c));
  }

  // A schema default as an argument ("1" for `int[2] stride=1` is [1, 1]).
  Arg default_arg(const SchemaArg& s, size_t column) {
    const std::string& text = *s.default_text;
    LineParser sub(text, line_number_, g_, values_);
    Element e = sub.parse_element();
    if (s.is_int_list() && e.kind == Element::Kind::Constant && e.constant.is_int()) {
      const size_t open = s.type.find('[');
      const int n = std::max(1, std::atoi(s.type.c_str() + open + 1));
      return Arg::constant(
          IValue(DimVector(static_cast<size_t>(n), e.constant.to_sym_int().raw())));
    }
    if (e.kind == Element::Kind::Constant && e.constant.is_none() && s.is_tensor_list())
      return Arg::constant(IValue());
    return to_arg(e, &s);
  }

  std::vector<Arg> parse_call_args(const OpDef& op) {
    const Schema& schema = schema_of(op);
    expect('(');
    std::vector<std::optional<Arg>> args;
    bool keywords = false;
    skip_space();
    if (!accept(')')) {
      while (true) {
        skip_space();
        const size_t column = pos_;
        int index = static_cast<int>(args.size());
        // `name=value`: an identifier followed by '='.
        size_t look = pos_;
        while (look < line_.size() && is_ident_char(line_[look])) ++look;
        size_t after = look;
        while (after < line_.size() && line_[after] == ' ') ++after;
        if (look > pos_ && is_ident_start(line_[pos_]) && after < line_.size() &&
            line_[after] == '=') {
          const std::string name(line_.substr(pos_, look - pos_));
          index = schema.index_of(name);
          KILN_CHECK_AT(index >= 0, column, "{} has no argument named '{}'; schema: {}", op.name,
                        name, op.schema);
          pos_ = after + 1;
          keywords = true;
        } else {
          KILN_CHECK_AT(!keywords, column, "a positional argument after a keyword argument");
        }
        Element e = parse_element();
        if (args.size() <= static_cast<size_t>(index)) args.resize(index + 1);
        KILN_CHECK_AT(!args[index].has_value(), column, "argument '{}' is given twice",
                      schema.args[index].name);
        const SchemaArg* type =
            static_cast<size_t>(index) < schema.args.size() ? &schema.args[index] : nullptr;
        args[index] = to_arg(e, type);
        if (accept(')')) break;
        expect_separator(')');
      }
    }
    std::vector<Arg> out;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].has_value()) {
        out.push_back(std::move(*args[i]));
        continue;
      }
      const SchemaArg& s = schema.args[i];
      KILN_CHECK_AT(s.default_text.has_value(), pos_ - 1,
                    "{}: argument '{}' is missing; schema: {}", op.name, s.name, op.schema);
      out.push_back(default_arg(s, pos_ - 1));
    }
    return out;
  }

  void parse_return() {
    pos_ += std::string_view("return").size();
    expect('(');
    std::vector<Value*> outputs;
    if (!accept(')')) {
      while (true) {
        skip_space();
        outputs.push_back(parse_value_use());
        if (accept(')')) break;
        expect_separator(')');
      }
    }
    expect_end();
    g_.set_outputs(std::move(outputs));
  }
#undef KILN_CHECK_AT

  std::string_view line_;
  Node* call_ = nullptr;
  size_t pos_ = 0;
  int line_number_;
  Graph& g_;
  std::unordered_map<int, Value*>& values_;
};

// A line that opens a subgraph block: `name {` (Note [Graph text format]).
std::optional<std::string> block_name(std::string_view content) {
  if (content.size() < 3 || content.back() != '{' || !is_ident_start(content.front()))
    return std::nullopt;
  const std::string_view name = trim(content.substr(0, content.size() - 1));
  for (char c : name)
    if (!is_ident_char(c) || c == '.') return std::nullopt;
  return std::string(name);
}

// Parses lines[first, last) as one graph; `lines` are numbered from 1.
Graph parse_lines(const std::vector<std::string_view>& lines, size_t first, size_t last) {
  Graph g;
  std::unordered_map<int, Value*> values;
  bool returned = false;
  for (size_t i = first; i < last; ++i) {
    const int line_number = static_cast<int>(i) + 1;
    const std::string_view content = trim(lines[i]);
    if (content.empty() || content.front() == '#') continue;
    if (returned)
      throw ValueError(
          fmt::format("parse_graph: line {}:1: a statement after `return`", line_number));
    if (block_name(content))
      throw ValueError(fmt::format(
          "parse_graph: line {}:1: a subgraph block `{}` that follows no call of a higher-order "
          "op",
          line_number, content));
    LineParser statement(lines[i], line_number, g, values);
    returned = statement.parse_statement();
    Node* call = statement.call();
    // The call's subgraph blocks, each up to the `}` that closes it.
    std::vector<Subgraph> subgraphs;
    while (call != nullptr && i + 1 < last) {
      const std::optional<std::string> name = block_name(trim(lines[i + 1]));
      if (!name) break;
      const size_t open = i + 1;
      size_t close = open + 1;
      int depth = 1;
      for (; close < last; ++close) {
        const std::string_view c = trim(lines[close]);
        if (c == "}" && --depth == 0) break;
        if (block_name(c)) ++depth;
      }
      if (close == last)
        throw ValueError(fmt::format("parse_graph: line {}:1: subgraph `{}` has no closing `}}`",
                                     open + 1, *name));
      subgraphs.push_back(
          {*name, std::make_shared<const Graph>(parse_lines(lines, open + 1, close))});
      i = close;
    }
    if (!subgraphs.empty()) call->set_subgraphs(std::move(subgraphs));
  }
  return g;
}

}  // namespace

Graph parse_graph(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parse_lines(lines, 0, lines.size());
}

}  // namespace kiln::graph
