// graph::record_call (Note [Recording an op into a graph]): the one path by which the tracer and
// the joint-graph recorder turn a dispatched op into a node.
#include <gtest/gtest.h>

#include <map>

#include "kiln/kiln.h"
#include "src/graph/recorder.h"

using namespace kiln;

namespace {

// Maps Meta tensors to placeholders and hands the meta function a twin it made, counting calls.
class TestClient : public graph::RecordingClient {
 public:
  graph::Graph g;
  std::map<const TensorImpl*, graph::Value*> values;
  std::map<const TensorImpl*, Tensor> twins;
  int value_calls = 0;

  graph::Value* value_of(const Tensor& t, std::string_view op) override {
    ++value_calls;
    auto it = values.find(t.impl());
    if (it != values.end()) return it->second;
    graph::Value* v =
        g.add_placeholder("arg" + std::to_string(values.size()), graph::TensorMeta::of(t));
    values[t.impl()] = v;
    twins[t.impl()] = kiln::empty(t.sizes(), TensorOptions(t.dtype()).device(Device::Meta));
    return v;
  }
  Tensor meta_twin(const Tensor& t) override { return twins.at(t.impl()); }
  graph::Graph& graph() override { return g; }
};

const OpDef& op(std::string_view name) {
  return OpRegistry::instance().get(OpRegistry::instance().id(name));
}

}  // namespace

TEST(RecordCall, MapsTensorsRunsTheMetaFunctionOnTwinsAndAddsOneNode) {
  TestClient client;
  // Real tensors: the meta function must see only their Meta twins (and not touch the data).
  const Tensor a = kiln::ones({2, 3}), b = kiln::ones({3});
  Stack args{IValue(a), IValue(b), IValue(Scalar(1))};
  Stack outputs;
  std::vector<graph::Value*> values = graph::record_call(op("add"), args, outputs, client, "test");
  ASSERT_EQ(values.size(), 1u);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].tensor().device(), Device::Meta);
  EXPECT_EQ(outputs[0].tensor().sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values[0]->meta().sizes.size(), 2u);
  EXPECT_EQ(client.value_calls, 4);  // each tensor before and after the meta function
  const std::string text = graph::to_string(client.g);
  EXPECT_NE(text.find("add(%0, %1, alpha=1)"), std::string::npos) << text;
}

TEST(RecordCall, ADeviceArgumentRunsOnMetaAndIsRecordedAsCpu) {
  TestClient client;
  Stack args{IValue(std::vector<int64_t>{4}), IValue(Scalar(2.5)), IValue(kFloat32),
             IValue(Device::CPU)};
  Stack outputs;
  graph::record_call(op("full"), args, outputs, client, "test");
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].tensor().device(), Device::Meta);  // no real allocation while recording
  const std::string text = graph::to_string(client.g);
  EXPECT_NE(text.find("cpu"), std::string::npos) << text;
  EXPECT_EQ(text.find("meta"), std::string::npos) << text;
}

TEST(RecordCall, AnErrorOfTheMetaFunctionAddsNoNode) {
  TestClient client;
  Stack args{IValue(kiln::ones({2, 3})), IValue(kiln::ones({4})), IValue(Scalar(1))};
  Stack outputs;
  EXPECT_THROW(graph::record_call(op("add"), args, outputs, client, "test"), ShapeError);
  EXPECT_TRUE(client.g.calls().empty());
}
