// The parts of torch::data's transforms (kiln/torch/data_transforms.h) that do not depend on
// their template arguments.
#include <vector>

#include "kiln/ops/creation.h"
#include "kiln/torch/data_transforms.h"

namespace torch::data::transforms::detail {

Tensor channel_tensor(ArrayRef<double> values) {
  TORCH_CHECK(values.size() > 0, "Normalize: mean and stddev need at least one value each");
  return kiln::from_vector(values.vec()).to(kiln::kFloat32).view({-1, 1, 1});
}

}  // namespace torch::data::transforms::detail
