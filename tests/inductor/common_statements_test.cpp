// Note [Common statements of a fused body]: the CSE over a printed loop body.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/codegen/cpp/common_statements.h"

namespace kiln::codegen {
namespace {

using Body = std::vector<std::string>;

TEST(CommonStatements, ARepeatedStatementIsDroppedAndItsNameRenamed) {
  Body body = {
      "const kf8 n0_t0 = kiln_loadu(arg0 + (i0));", "const kf8 n0_t1 = kiln_sigmoid(n0_t0);",
      "kiln_storeu(buf0 + (i0), n0_t1);",           "const kf8 n1_t0 = kiln_loadu(arg0 + (i0));",
      "const kf8 n1_t1 = kiln_sigmoid(n1_t0);",     "const kf8 n1_t10 = (n1_t1 * n1_t1);",
      "kiln_storeu(buf1 + (i0), n1_t10);",
  };
  merge_common_statements(body);
  const Body expected = {
      "const kf8 n0_t0 = kiln_loadu(arg0 + (i0));", "const kf8 n0_t1 = kiln_sigmoid(n0_t0);",
      "kiln_storeu(buf0 + (i0), n0_t1);",
      "const kf8 n1_t10 = (n0_t1 * n0_t1);",  // n1_t10 is not n1_t1 followed by "0"
      "kiln_storeu(buf1 + (i0), n1_t10);",
  };
  EXPECT_EQ(body, expected);
}

TEST(CommonStatements, AStoreForgetsTheLoadsOfItsBufferOnly) {
  Body body = {
      "const float n0_t0 = buf2[i0];",
      "const float n0_t1 = arg0[i0];",
      "buf2[i0] = n0_t1;",
      "const float n1_t0 = buf2[i0];",  // reads what the store wrote: kept
      "const float n1_t1 = arg0[i0];",  // arg0 was not written: merged
      "kiln_stream_if(true, arg0 + (i0), n1_t0);",
      "const float n2_t0 = arg0[i0];",  // now it was: kept
  };
  merge_common_statements(body);
  ASSERT_EQ(body.size(), 6u);
  EXPECT_EQ(body[3], "const float n1_t0 = buf2[i0];");
  EXPECT_EQ(body[4], "kiln_stream_if(true, arg0 + (i0), n1_t0);");
  EXPECT_EQ(body[5], "const float n2_t0 = arg0[i0];");
}

TEST(CommonStatements, AnAccumulatorUpdateForgetsEverything) {
  Body body = {
      "const float n0_t0 = (n0_acc * 2.0f);",
      "n0_acc = n0_acc + n0_t0;",
      "const float n0_t1 = (n0_acc * 2.0f);",
  };
  merge_common_statements(body);
  EXPECT_EQ(body.size(), 3u);
}

TEST(CommonStatements, KnownStatementsAreReusedNotDropped) {
  const Body invariant = {"const float n0_t5 = (float)(n0_t4);"};
  Body body = {"const float n1_t5 = (float)(n0_t4);", "const kf8 n1_t6 = kiln_splat(n1_t5);"};
  merge_common_statements(body, invariant);
  EXPECT_EQ(body, Body{"const kf8 n1_t6 = kiln_splat(n0_t5);"});
}

}  // namespace
}  // namespace kiln::codegen
