// nn::init: fill a tensor in place, under NoGradGuard, as libtorch's torch::nn::init does. Random
// fills draw from kiln's global generator, which replicates libtorch's CPU mt19937 stream, so
// `manual_seed(0)` followed by the same layers gives the same weights as libtorch.
#pragma once
#include <string>
#include <tuple>

#include "frontend/nn/enum.h"
#include "frontend/tensor.h"

namespace kiln {
namespace nn::init {

// Which nonlinearity a gain is for (torch::kReLU, torch::kLeakyReLU, ...), and which fan
// (torch::kFanIn, torch::kFanOut) a Kaiming init scales by.
class NonlinearityType {
 public:
  template <typename Tag, typename = decltype(Tag::name())>
  NonlinearityType(Tag) : name_(Tag::name()) {}
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};
class FanModeType {
 public:
  FanModeType(enumtype::kFanIn) : name_("fan_in") {}
  FanModeType(enumtype::kFanOut) : name_("fan_out") {}
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// The recommended gain for a nonlinearity (`param` is leaky_relu's negative slope).
double calculate_gain(NonlinearityType nonlinearity, double param = 0.01);
// (fan_in, fan_out) of a weight of at least 2 dimensions.
std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor constant_(Tensor tensor, Scalar value);
Tensor ones_(Tensor tensor);
Tensor zeros_(Tensor tensor);
Tensor uniform_(Tensor tensor, double low = 0, double high = 1);
Tensor normal_(Tensor tensor, double mean = 0, double std = 1);
// The identity in a 2-D tensor.
Tensor eye_(Tensor matrix);
// A convolution weight [out, in, k...] (3 to 5 dims) that passes channel d to channel d unchanged:
// one 1 at the kernel's center of [d][d] for d < min(out, in).
Tensor dirac_(Tensor tensor);
// A (semi-)orthogonal matrix (the tensor flattened to [rows, numel / rows]) times gain: the Q of a
// Gaussian matrix's QR, its columns' signs fixed by R's diagonal (Mezzadri's uniform measure).
Tensor orthogonal_(Tensor tensor, double gain = 1.0);
// A 2-D tensor ~ N(0, std) with ceil(sparsity * rows) zeros in each column, rows drawn by randperm.
Tensor sparse_(Tensor tensor, double sparsity, double std = 0.01);
// libtorch's default for Linear and Conv: weight ~ kaiming_uniform(a = sqrt(5)), which bounds it
// by 1/sqrt(fan_in), and bias (if defined) ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void default_layer_init_(Tensor weight, Tensor bias);
Tensor kaiming_uniform_(Tensor tensor, double a = 0, FanModeType mode = kFanIn,
                        NonlinearityType nonlinearity = kLeakyReLU);
Tensor kaiming_normal_(Tensor tensor, double a = 0, FanModeType mode = kFanIn,
                       NonlinearityType nonlinearity = kLeakyReLU);
Tensor xavier_uniform_(Tensor tensor, double gain = 1.0);
Tensor xavier_normal_(Tensor tensor, double gain = 1.0);

}  // namespace nn::init
}  // namespace kiln
