// The activations added with kiln's math ops: libtorch's options, nn::functional forms and
// modules (ELU, SELU, CELU, Hardtanh, ReLU6, Mish, Softsign; Hardsigmoid and Hardswish, which
// libtorch 1.13 has in Python only, in the same form). LeakyReLU and Softplus are in modules.h.
#pragma once
#include "frontend/nn/module.h"
#include "frontend/nn/modules.h"
#include "frontend/nn/options.h"

namespace kiln::nn {

struct ELUOptions {
  KILN_ARG(double, alpha) = 1.0;
  KILN_ARG(bool, inplace) = false;
};
struct SELUOptions {
  /* implicit */ SELUOptions(bool inplace = false) : inplace_(inplace) {}
  KILN_ARG(bool, inplace);
};
struct CELUOptions {
  KILN_ARG(double, alpha) = 1.0;
  KILN_ARG(bool, inplace) = false;
};
struct HardtanhOptions {
  KILN_ARG(double, min_val) = -1.0;
  KILN_ARG(double, max_val) = 1.0;
  KILN_ARG(bool, inplace) = false;
};
struct ReLU6Options {
  /* implicit */ ReLU6Options(bool inplace = false) : inplace_(inplace) {}
  KILN_ARG(bool, inplace);
};
namespace functional {
using ELUFuncOptions = ELUOptions;
using SELUFuncOptions = SELUOptions;
using CELUFuncOptions = CELUOptions;
using HardtanhFuncOptions = HardtanhOptions;
using ReLU6FuncOptions = ReLU6Options;

Tensor elu(Tensor input, const ELUFuncOptions& options = {});
Tensor selu(Tensor input, const SELUFuncOptions& options = {});
Tensor celu(Tensor input, const CELUFuncOptions& options = {});
Tensor hardtanh(Tensor input, const HardtanhFuncOptions& options = {});
Tensor relu6(Tensor input, const ReLU6FuncOptions& options = {});
Tensor hardsigmoid(const Tensor& input);
Tensor hardswish(const Tensor& input);
Tensor mish(const Tensor& input);
Tensor softsign(const Tensor& input);
}  // namespace functional

// A module whose forward is functional::fn with its options.
#define KILN_OPTIONS_ACTIVATION(Name, fn)                                              \
  class Name##Impl : public Module {                                                   \
   public:                                                                             \
    explicit Name##Impl(const Name##Options& options = {}) : options(options) {}       \
    Tensor forward(Tensor input) { return functional::fn(std::move(input), options); } \
    void pretty_print(std::ostream& stream) const override;                            \
    Name##Options options;                                                             \
  };                                                                                   \
  KILN_MODULE(Name)
KILN_OPTIONS_ACTIVATION(ELU, elu);
KILN_OPTIONS_ACTIVATION(SELU, selu);
KILN_OPTIONS_ACTIVATION(CELU, celu);
KILN_OPTIONS_ACTIVATION(Hardtanh, hardtanh);
KILN_OPTIONS_ACTIVATION(ReLU6, relu6);
#undef KILN_OPTIONS_ACTIVATION

// Without options, as modules.h's Tanh or SiLU.
KILN_SIMPLE_ACTIVATION(Hardsigmoid, hardsigmoid);
KILN_SIMPLE_ACTIVATION(Hardswish, hardswish);
KILN_SIMPLE_ACTIVATION(Mish, mish);
KILN_SIMPLE_ACTIVATION(Softsign, softsign);

}  // namespace kiln::nn
