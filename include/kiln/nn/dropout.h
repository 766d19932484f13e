// Dropout, as torch.nn.Dropout, and channel dropout, as torch.nn.Dropout1d/2d/3d: active only in
// training mode.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/generator.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

// In training, zeroes each element with probability p and scales the others by 1 / (1 - p); in
// eval mode returns its input. Draws from `generator`, or the default generator when null (seed
// it with kiln::manual_seed for reproducible masks). ValueError for p outside [0, 1].
class Dropout : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Dropout>(p, generator_));
  }
  explicit Dropout(double p = 0.5, Generator* generator = nullptr);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const double p;

 private:
  Generator* generator_;
};

// Channel ("feature") dropout of input (N, C, *), at least 2-D: when `train`, zeroes each whole
// channel input[n, c] with probability p and scales the others by 1 / (1 - p); returns `input`
// itself otherwise. A composite of ops (dropout of a ones mask of shape (N, C, 1, ...), times the
// input), so it is differentiable and kiln::compile traces it. ValueError for p outside [0, 1],
// ShapeError for a 0-D or 1-D input, DTypeError for a non-floating one.
Tensor feature_dropout(const Tensor& input, double p, bool train = true,
                       Generator* generator = nullptr);

// Dropout1d/2d/3d: feature_dropout of a batched (N, C, *spatial) input or an unbatched
// (C, *spatial) one, with 1, 2 or 3 spatial dims; any other rank raises ShapeError naming the
// module. (PyTorch's Python Dropout2d takes a 3-D input as (N, C, L), with a warning that this
// will change; here, as in LibTorch, it is an unbatched (C, H, W).)
class DropoutNd : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const double p;

 protected:
  DropoutNd(std::string name, int64_t spatial_dims, double p, Generator* generator);
  Generator* generator() const { return generator_; }

 private:
  int64_t spatial_dims_;
  Generator* generator_;
};

class Dropout1d : public DropoutNd {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Dropout1d>(p, generator()));
  }
  explicit Dropout1d(double p = 0.5, Generator* generator = nullptr)
      : DropoutNd("Dropout1d", 1, p, generator) {}
};

class Dropout2d : public DropoutNd {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Dropout2d>(p, generator()));
  }
  explicit Dropout2d(double p = 0.5, Generator* generator = nullptr)
      : DropoutNd("Dropout2d", 2, p, generator) {}
};

class Dropout3d : public DropoutNd {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Dropout3d>(p, generator()));
  }
  explicit Dropout3d(double p = 0.5, Generator* generator = nullptr)
      : DropoutNd("Dropout3d", 3, p, generator) {}
};

}  // namespace kiln::nn
