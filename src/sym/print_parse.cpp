// Text form of sym::Expr: code-like infix with Python's `//` and `%`, `Min(a, b)`, comparisons
// with the constant on the right (`s0 > 8` for Lt(8, s0)), `&&`, `||`, `!`, `True`, `False`.
// parse(to_string(e)) == e for every canonical e (tests/sym/print_parse_test.cpp).
#include <cctype>
#include <charconv>

#include "kiln/error.h"
#include "src/sym/expr.h"

namespace kiln::sym {
namespace {

// Binding strength, loosest first. Binary operators are left-associative: the left operand
// needs the operator's level, the right operand one more.
enum Prec : int { kOr = 1, kAnd, kNot, kCompare, kAdd, kMul, kUnary, kAtom };

int precedence(ExprPtr e) {
  switch (e->kind()) {
    case ExprKind::Integer:
      return e->value() < 0 ? kUnary : kAtom;
    case ExprKind::Add:
      return kAdd;
    case ExprKind::Mul:
    case ExprKind::FloorDiv:
    case ExprKind::Mod:
      return kMul;
    case ExprKind::Eq:
    case ExprKind::Ne:
    case ExprKind::Lt:
    case ExprKind::Le:
      return kCompare;
    case ExprKind::And:
      return kAnd;
    case ExprKind::Or:
      return kOr;
    case ExprKind::Not:
      return kNot;
    default:
      return kAtom;
  }
}

bool is_negative_term(ExprPtr e) {
  return e->kind() == ExprKind::Mul && e->args()[0]->is_integer() && e->args()[0]->value() < 0;
}

void print(ExprPtr e, int min_prec, std::string& out);

void print_sum(std::span<const ExprPtr> terms, std::string& out) {
  for (size_t i = 0; i < terms.size(); ++i) {
    ExprPtr t = terms[i];
    if (i == 0) {
      print(t, kAdd, out);
    } else if (t->is_integer() && t->value() < 0 && t->value() != INT64_MIN) {
      out += fmt::format(" - {}", -t->value());
    } else if (is_negative_term(t)) {
      out += " - ";
      print(mul(integer(-1), t), kMul, out);
    } else {
      out += " + ";
      print(t, kMul, out);
    }
  }
}

// Lt(8, s0) prints as `s0 > 8`, Eq(s0 - s1, 0) as `s0 == s1`: positive terms on the left,
// negated negative terms and the constant on the right.
void print_comparison(ExprPtr e, std::string& out) {
  bool constant_left = e->args()[0]->is_integer();
  ExprPtr constant = e->args()[constant_left ? 0 : 1], sum = e->args()[constant_left ? 1 : 0];
  ExprPtr left = integer(0), right = constant;
  auto terms = sum->kind() == ExprKind::Add ? sum->args() : std::span<const ExprPtr>(&sum, 1);
  for (ExprPtr t : terms) {
    if (is_negative_term(t)) {
      right = add(right, mul(integer(-1), t));
    } else {
      left = add(left, t);
    }
  }
  const char* op = "";
  switch (e->kind()) {
    case ExprKind::Eq:
      op = " == ";
      break;
    case ExprKind::Ne:
      op = " != ";
      break;
    case ExprKind::Lt:
      op = constant_left ? " > " : " < ";
      break;
    default:
      op = constant_left ? " >= " : " <= ";
      break;
  }
  print(left, kAdd, out);
  out += op;
  print(right, kAdd, out);
}

void print(ExprPtr e, int min_prec, std::string& out) {
  bool parens = precedence(e) < min_prec;
  if (parens) out += '(';
  auto args = e->args();
  auto join = [&](const char* sep, int prec) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (i > 0) out += sep;
      print(args[i], prec, out);
    }
  };
  switch (e->kind()) {
    case ExprKind::Integer:
      out += fmt::format("{}", e->value());
      break;
    case ExprKind::Symbol:
      out += e->name();
      break;
    case ExprKind::True:
      out += "True";
      break;
    case ExprKind::False:
      out += "False";
      break;
    case ExprKind::Add:
      print_sum(args, out);
      break;
    case ExprKind::Mul: {
      size_t first = 0;
      if (args[0]->is_integer()) {
        first = 1;
        out += args[0]->value() == -1 ? std::string("-") : fmt::format("{}*", args[0]->value());
      }
      for (size_t i = first; i < args.size(); ++i) {
        if (i > first) out += '*';
        print(args[i], first == 0 && i == 0 ? kMul : kUnary, out);
      }
      break;
    }
    case ExprKind::FloorDiv:
    case ExprKind::Mod:
      print(args[0], kMul, out);
      out += e->kind() == ExprKind::Mod ? " % " : "//";
      print(args[1], kUnary, out);
      break;
    case ExprKind::Min:
    case ExprKind::Max:
      out += e->kind() == ExprKind::Min ? "Min(" : "Max(";
      join(", ", 0);
      out += ')';
      break;
    case ExprKind::Eq:
    case ExprKind::Ne:
    case ExprKind::Lt:
    case ExprKind::Le:
      print_comparison(e, out);
      break;
    case ExprKind::And:
      join(" && ", kNot);
      break;
    case ExprKind::Or:
      join(" || ", kAnd);
      break;
    case ExprKind::Not:
      out += '!';
      print(args[0], kNot, out);
      break;
  }
  if (parens) out += ')';
}

// Recursive descent over the grammar
//   or := and ('||' and)*        and := not ('&&' not)*        not := '!' not | compare
//   compare := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
//   sum := product (('+'|'-') product)*    product := unary (('*'|'//'|'%') unary)*
//   unary := '-' unary | atom    atom := INT | NAME | True | False | (Min|Max) '(' or, or ')' | '('
//   or ')'
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  ExprPtr parse_all() {
    ExprPtr e = parse_or();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text");
    return e;
  }

 private:
  [[noreturn]] void fail(std::string_view what) {
    throw ValueError(fmt::format("sym::parse: {} at position {} in '{}'", what, pos_, text_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) fail(fmt::format("expected '{}'", token));
  }
  // Wraps a factory so a type error (`s0 + (s1 < 2)`) names the position of the operator.
  template <typename F>
  ExprPtr build(size_t at, F&& f) {
    try {
      return f();
    } catch (const ValueError& err) {
      pos_ = at;
      fail(err.what());
    }
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    for (size_t at = pos_; accept("||"); at = pos_) {
      ExprPtr r = parse_and();
      e = build(at, [&] { return logical_or(e, r); });
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    for (size_t at = pos_; accept("&&"); at = pos_) {
      ExprPtr r = parse_not();
      e = build(at, [&] { return logical_and(e, r); });
    }
    return e;
  }
  ExprPtr parse_not() {
    skip_space();
    size_t at = pos_;
    if (text_.substr(pos_, 2) != "!=" && accept("!")) {
      ExprPtr e = parse_not();
      return build(at, [&] { return logical_not(e); });
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr e = parse_sum();
    skip_space();
    size_t at = pos_;
    using Factory = ExprPtr (*)(ExprPtr, ExprPtr);
    struct Op {
      std::string_view token;
      Factory make;
      bool swap;
    };
    static const Op ops[] = {{"==", &eq, false}, {"!=", &ne, false}, {"<=", &le, false},
                             {">=", &le, true},  {"<", &lt, false},  {">", &lt, true}};
    for (const Op& op : ops) {
      if (accept(op.token)) {
        ExprPtr r = parse_sum();
        return build(at, [&] { return op.swap ? op.make(r, e) : op.make(e, r); });
      }
    }
    return e;
  }
  ExprPtr parse_sum() {
    ExprPtr e = parse_product();
    while (true) {
      skip_space();
      size_t at = pos_;
      if (accept("+")) {
        ExprPtr r = parse_product();
        e = build(at, [&] { return add(e, r); });
      } else if (accept("-")) {
        ExprPtr r = parse_product();
        e = build(at, [&] { return sub(e, r); });
      } else {
        return e;
      }
    }
  }
  ExprPtr parse_product() {
    ExprPtr e = parse_unary();
    while (true) {
      skip_space();
      size_t at = pos_;
      ExprPtr (*make)(ExprPtr, ExprPtr) = nullptr;
      if (accept("//")) {
        make = &floordiv;
      } else if (accept("*")) {
        make = &mul;
      } else if (accept("%")) {
        make = &mod;
      } else {
        return e;
      }
      ExprPtr r = parse_unary();
      e = build(at, [&] { return make(e, r); });
    }
  }
  ExprPtr parse_unary() {
    skip_space();
    size_t at = pos_;
    if (!accept("-")) return parse_atom();
    skip_space();
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      pos_ = at;  // a negative literal, so INT64_MIN reads back
      return parse_integer();
    }
    ExprPtr e = parse_unary();
    return build(at, [&] { return mul(integer(-1), e); });
  }
  ExprPtr parse_integer() {
    size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    skip_space();
    std::string digits(text_.substr(start, 1) == "-" ? "-" : "");
    size_t first = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    digits += text_.substr(first, pos_ - first);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || end != digits.data() + digits.size()) {
      pos_ = start;
      fail("integer out of range");
    }
    return integer(v);
  }
  ExprPtr parse_atom() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of input");
    char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) return parse_integer();
    if (accept("(")) {
      ExprPtr e = parse_or();
      expect(")");
      return e;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') {
      fail(fmt::format("unexpected '{}'", c));
    }
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    std::string_view name = text_.substr(start, pos_ - start);
    if (name == "True" || name == "False") return boolean(name == "True");
    if (name == "Min" || name == "Max") {
      expect("(");
      ExprPtr a = parse_or();
      expect(",");
      ExprPtr b = parse_or();
      expect(")");
      return build(start, [&] { return name == "Min" ? min(a, b) : max(a, b); });
    }
    return symbol(name);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::string to_string(ExprPtr e) {
  std::string out;
  print(e, 0, out);
  return out;
}

ExprPtr parse(std::string_view text) { return Parser(text).parse_all(); }

}  // namespace kiln::sym
