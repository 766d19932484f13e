// The op harness: see tests/ops/harness.h.
#include <gtest/gtest.h>

#include <set>

#include "src/core/shape.h"
#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

class OpHarness : public ::testing::TestWithParam<std::string> {};

TEST_P(OpHarness, HasOpInfoOrExemption) {
  const std::string& name = GetParam();
  EXPECT_TRUE(find_op_info(name) != nullptr || exemption_reason(name) != nullptr)
      << "op '" << name << "' has no OpInfo in tests/ops/*_opinfo.cpp and no exemption";
}

TEST_P(OpHarness, EagerMatchesReferenceAndMetaMatchesEager) {
  const std::string& name = GetParam();
  const OpInfo* info = find_op_info(name);
  if (info == nullptr) GTEST_SKIP() << exemption_reason(name);
  const OpDef& op = OpRegistry::instance().get(op_id(name));
  std::mt19937_64 rng(std::hash<std::string>{}(name));
  int checked = 0;
  for (ScalarType dtype : kAllScalarTypes) {
    if (!op.dtypes.contains(dtype)) continue;
    auto [atol, rtol] = info->tolerance ? info->tolerance(dtype) : default_tolerance(dtype);
    for (SampleInput& sample : info->samples(dtype, rng)) {
      SCOPED_TRACE(
          fmt::format("op {} dtype {} sample {}", name, dtype_name(dtype), sample.description));
      std::vector<Tensor> expected;
      if (info->compare_values) expected = info->reference(sample.args);
      Stack args = copy_args(sample.args);
      // Keep the sample's own layout for the call itself.
      for (size_t i = 0; i < args.size(); ++i)
        if (sample.args[i].is_tensor()) args[i] = sample.args[i];
      Stack meta_in = meta_args(sample.args);
      Stack out = dispatch::call(op.id, args);
      std::vector<Tensor> actual = tensors_of(out);
      if (info->compare_values) {
        ASSERT_EQ(actual.size(), expected.size()) << "number of outputs";
        for (size_t i = 0; i < actual.size(); ++i) {
          if (!expected[i].defined()) continue;
          std::string diff = compare_tensors(actual[i], expected[i], atol, rtol);
          EXPECT_EQ(diff, "") << "output " << i;
        }
      }
      if (!op.has_tag(kTagDynamicOutput)) {
        std::vector<Tensor> meta_out = tensors_of(dispatch::call(op.id, meta_in));
        ASSERT_EQ(meta_out.size(), actual.size());
        for (size_t i = 0; i < actual.size(); ++i) {
          EXPECT_TRUE(meta_out[i].is_meta());
          EXPECT_EQ(meta_out[i].dtype(), actual[i].dtype()) << "meta output " << i;
          EXPECT_EQ(shape_str(meta_out[i].sizes()), shape_str(actual[i].sizes()))
              << "meta output " << i;
          EXPECT_EQ(shape_str(meta_out[i].strides()), shape_str(actual[i].strides()))
              << "meta strides of output " << i;
        }
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 0) << "no sample ran for " << name;
}

TEST_P(OpHarness, BadInputsRaiseTheRightError) {
  const std::string& name = GetParam();
  const OpInfo* info = find_op_info(name);
  if (info == nullptr || !info->error_cases) {
    GTEST_SKIP() << name << " registers no error cases (an op with no invalid input, e.g. squeeze; "
                 << "or exempted: " << (exemption_reason(name) ? exemption_reason(name) : "-")
                 << ")";
  }
  const OpId id = op_id(name);
  for (ErrorCase& c : info->error_cases()) {
    SCOPED_TRACE(c.description);
    try {
      dispatch::call(id, c.args);
      ADD_FAILURE() << name << ": expected an error for " << c.description;
    } catch (const ShapeError& e) {
      EXPECT_EQ(c.kind, ErrorKind::Shape) << e.what();
      EXPECT_NE(std::string(e.what()).find(name.substr(0, name.find('.'))), std::string::npos)
          << e.what();
    } catch (const DTypeError& e) {
      EXPECT_EQ(c.kind, ErrorKind::DType) << e.what();
      EXPECT_NE(std::string(e.what()).find(name.substr(0, name.find('.'))), std::string::npos)
          << e.what();
    } catch (const IndexError& e) {
      EXPECT_EQ(c.kind, ErrorKind::Index) << e.what();
      EXPECT_NE(std::string(e.what()).find(name.substr(0, name.find('.'))), std::string::npos)
          << e.what();
    } catch (const ValueError& e) {
      EXPECT_EQ(c.kind, ErrorKind::Value) << e.what();
      EXPECT_NE(std::string(e.what()).find(name.substr(0, name.find('.'))), std::string::npos)
          << e.what();
    } catch (const NotImplementedError& e) {
      EXPECT_EQ(c.kind, ErrorKind::NotImplemented) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpHarness, ::testing::ValuesIn(all_op_names()),
                         [](const auto& info) { return op_test_name(info.param); });

TEST(OpHarnessMeta, EveryOpInfoNamesARealOp) {
  for (const OpInfo& info : op_infos())
    EXPECT_NE(OpRegistry::instance().find(info.name), nullptr) << info.name;
}

}  // namespace
}  // namespace kiln::testing

namespace kiln::testing {
namespace {

TEST(OpTable, EveryEntryIsWellFormed) {
  for (const auto& op : OpRegistry::instance().ops()) {
    SCOPED_TRACE(op->name);
    // The schema starts with the op's own name: "add(Tensor self, ...) -> Tensor".
    EXPECT_EQ(op->schema.substr(0, op->name.size() + 1), op->name + "(");
    EXPECT_NE(op->schema.find(") -> "), std::string::npos);
    EXPECT_FALSE(op->family.empty());
    EXPECT_TRUE(op->meta != nullptr || op->composite != nullptr);
    EXPECT_FALSE(op->dtypes.empty());
    if (op->has_tag(kTagInplace)) {
      // "add_" or an overload of it, "add_.Scalar".
      const std::string base = op->name.substr(0, op->name.find('.'));
      EXPECT_EQ(base.back(), '_') << "in-place ops end in _";
    }
    EXPECT_EQ(&OpRegistry::instance().get(op->id), op.get());
  }
}

}  // namespace
}  // namespace kiln::testing
