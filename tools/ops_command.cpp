// `kiln ops [--json]`: prints the op table (src/dispatch/op_def.h), the same entries the tests,
// the tracer and the lowering iterate.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/dtype.h"
#include "src/dispatch/dispatcher.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace {

constexpr std::pair<OpTag, const char*> kTagNames[] = {
    {kTagView, "view"},           {kTagInplace, "inplace"},
    {kTagRandom, "random"},       {kTagDynamicOutput, "dynamic_output"},
    {kTagFactory, "factory"},     {kTagPointwise, "pointwise"},
    {kTagReduction, "reduction"}, {kTagNondifferentiable, "nondifferentiable"},
};

std::vector<std::string> tag_names(const OpDef& op) {
  std::vector<std::string> names;
  for (auto [tag, name] : kTagNames)
    if (op.has_tag(tag)) names.emplace_back(name);
  return names;
}

std::vector<std::string> dtype_names(DTypeSet set) {
  std::vector<std::string> names;
  for (ScalarType t : kAllScalarTypes)
    if (set.contains(t)) names.emplace_back(dtype_name(t));
  return names;
}

// A short name for the common dtype sets, the full list otherwise (text table only).
std::string dtypes_summary(DTypeSet set) {
  constexpr std::pair<DTypeSet, const char*> kNamedSets[] = {
      {dtypes::kAll, "all"},           {dtypes::kNumeric, "numeric"},
      {dtypes::kFloating, "floating"}, {dtypes::kIntegralAndBool, "integral+bool"},
      {dtypes::kIntegral, "integral"},
  };
  for (auto [named, name] : kNamedSets)
    if (set.raw() == named.raw()) return name;
  return fmt::format("{}", fmt::join(dtype_names(set), ","));
}

bool has_meta(const OpDef& op) { return op.meta != nullptr || op.composite != nullptr; }

std::vector<const OpDef*> sorted_ops() {
  std::vector<const OpDef*> ops;
  for (const auto& op : OpRegistry::instance().ops()) ops.push_back(op.get());
  std::sort(ops.begin(), ops.end(), [](const OpDef* a, const OpDef* b) {
    return std::tie(a->family, a->name) < std::tie(b->family, b->name);
  });
  return ops;
}

void print_json(const std::vector<const OpDef*>& ops) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const OpDef* op : ops) {
    out.push_back({
        {"name", op->name},
        {"schema", op->schema},
        {"family", op->family},
        {"dtypes", dtype_names(op->dtypes)},
        {"has_meta", has_meta(*op)},
        {"has_kernel", op->cpu != nullptr},
        {"composite", op->composite != nullptr},
        {"has_derivative", op->has_derivative},
        {"has_decomposition", op->has_decomposition},
        {"tags", tag_names(*op)},
    });
  }
  std::cout << out.dump(2) << "\n";
}

void print_table(const std::vector<const OpDef*>& ops) {
  auto yes = [](bool b) { return b ? "yes" : "-"; };
  fmt::print("{:<24} {:<10} {:<4} {:<4} {:<6} {:<22} {:<14} {}\n", "op", "family", "meta", "grad",
             "decomp", "tags", "dtypes", "schema");
  for (const OpDef* op : ops) {
    fmt::print("{:<24} {:<10} {:<4} {:<4} {:<6} {:<22} {:<14} {}\n", op->name, op->family,
               yes(has_meta(*op)), yes(op->has_derivative), yes(op->has_decomposition),
               fmt::format("{}", fmt::join(tag_names(*op), ",")), dtypes_summary(op->dtypes),
               op->schema);
  }
  fmt::print("{} ops\n", ops.size());
}

}  // namespace

int run_ops(bool json) {
  const std::vector<const OpDef*> ops = sorted_ops();
  if (json) {
    print_json(ops);
  } else {
    print_table(ops);
  }
  return 0;
}

}  // namespace kiln::tools
