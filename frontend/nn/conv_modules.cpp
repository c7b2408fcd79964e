// Conv1d, ConvTranspose1d/2d, the 1-D and adaptive pools, channel dropout and Upsample: their
// parameters and initialization as libtorch 1.13 has them, and how they print.
#include "frontend/nn/conv_modules.h"

#include "frontend/autograd.h"
#include "frontend/nn/init.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn {

using kiln::detail::shape_str;

namespace {
template <size_t D>
std::ostream& operator<<(std::ostream& os, const ExpandingArrayWithOptionalElem<D>& a) {
  os << "[";
  for (size_t i = 0; i < D; ++i) {
    os << (i ? ", " : "");
    if (a[i])
      os << *a[i];
    else
      os << "None";
  }
  return os << "]";
}
template <size_t D>
bool all_equal(const ExpandingArray<D>& a, int64_t value) {
  for (size_t i = 0; i < D; ++i)
    if (a[i] != value) return false;
  return true;
}

void check_channels(const char* name, int64_t in_channels, int64_t out_channels, int64_t groups) {
  KILN_CHECK(groups > 0 && in_channels > 0 && out_channels > 0, name,
             ": in_channels, out_channels and groups must "
             "be positive, got ",
             in_channels, ", ", out_channels, " and ", groups);
  KILN_CHECK(in_channels % groups == 0 && out_channels % groups == 0, name, ": in_channels (", in_channels,
             ") and out_channels (", out_channels, ") must be divisible by groups (", groups, ")");
}

// libtorch's convolution printout after the channels: kernel_size, stride, and what differs from
// the defaults.
template <typename Options>
void print_conv_options(std::ostream& stream, const Options& options) {
  stream << options.in_channels() << ", " << options.out_channels() << ", kernel_size=" << options.kernel_size()
         << ", stride=" << options.stride();
  if (!all_equal(options.padding(), 0)) stream << ", padding=" << options.padding();
  if (!all_equal(options.dilation(), 1)) stream << ", dilation=" << options.dilation();
  if (options.groups() != 1) stream << ", groups=" << options.groups();
  if (!options.bias()) stream << ", bias=false";
  if (!options.padding_mode().template is<enumtype::kZeros>())
    stream << ", padding_mode=" << options.padding_mode().name();
}
}  // namespace

// --- Conv1d ---

Conv1dImpl::Conv1dImpl(const Conv1dOptions& options_) : options(options_) {
  check_channels("Conv1d", options.in_channels(), options.out_channels(), options.groups());
  reset();
}

void Conv1dImpl::reset() {
  weight = register_parameter("weight", kiln::empty({options.out_channels(), options.in_channels() / options.groups(),
                                                     options.kernel_size()[0]}));
  bias = options.bias() ? register_parameter("bias", kiln::empty({options.out_channels()}))
                        : register_parameter("bias", Tensor(), /*requires_grad=*/false);
  reset_parameters();
}

void Conv1dImpl::reset_parameters() { init::default_layer_init_(weight, bias); }

Tensor Conv1dImpl::forward(const Tensor& input) {
  if (options.padding_mode().is<enumtype::kZeros>())
    return kiln::conv1d(input, weight, bias, options.stride(), options.padding(), options.dilation(), options.groups());
  const int64_t p = options.padding()[0];
  return kiln::conv1d(kiln::pad(input, {p, p}, options.padding_mode().name()), weight, bias, options.stride(), 0,
                      options.dilation(), options.groups());
}

void Conv1dImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Conv1d(";
  print_conv_options(stream, options);
  stream << ")";
}

// --- ConvTranspose1d, ConvTranspose2d ---

template <size_t D, typename Derived>
ConvTransposeNdImpl<D, Derived>::ConvTransposeNdImpl(const ConvTransposeOptions<D>& options_) : options(options_) {
  const char* name = D == 1 ? "ConvTranspose1d" : "ConvTranspose2d";
  check_channels(name, options.in_channels(), options.out_channels(), options.groups());
  KILN_CHECK(options.padding_mode().template is<enumtype::kZeros>(), name,
             ": only \"zeros\" padding mode is supported, got \"", options.padding_mode().name(), "\"");
  reset();
}

template <size_t D, typename Derived>
void ConvTransposeNdImpl<D, Derived>::reset() {
  Shape shape{options.in_channels(), options.out_channels() / options.groups()};
  for (size_t i = 0; i < D; ++i) shape.push_back(options.kernel_size()[i]);
  weight = register_parameter("weight", kiln::empty(shape));
  bias = options.bias() ? register_parameter("bias", kiln::empty({options.out_channels()}))
                        : register_parameter("bias", Tensor(), /*requires_grad=*/false);
  reset_parameters();
}

template <size_t D, typename Derived>
void ConvTransposeNdImpl<D, Derived>::reset_parameters() {
  init::default_layer_init_(weight, bias);
}

template <size_t D, typename Derived>
Tensor ConvTransposeNdImpl<D, Derived>::forward(const Tensor& input, const std::optional<IntArrayRef>& output_size) {
  const char* name = D == 1 ? "ConvTranspose1d" : "ConvTranspose2d";
  std::vector<int64_t> output_padding(D);
  for (size_t i = 0; i < D; ++i) output_padding[i] = options.output_padding()[i];
  if (output_size) {
    // The output_padding that gives output_size: each size has `stride` choices from the smallest.
    const IntArrayRef requested = output_size->size() == D + 2 ? IntArrayRef(output_size->data() + 2, D) : *output_size;
    KILN_CHECK(requested.size() == D && input.dim() >= int64_t(D), name, ": output_size must have ", D, " or ", D + 2,
               " elements, got ", output_size->vec(), " for input ", shape_str(input));
    for (size_t i = 0; i < D; ++i) {
      const int64_t in = input.size(input.dim() - D + i), s = options.stride()[i];
      const int64_t smallest =
          (in - 1) * s - 2 * options.padding()[i] + options.dilation()[i] * (options.kernel_size()[i] - 1) + 1;
      KILN_CHECK(requested[i] >= smallest && requested[i] < smallest + s, name, ": requested an output size of ",
                 output_size->vec(), ", but valid sizes of dimension ", i, " range from ", smallest, " to ",
                 smallest + s - 1, " (for input ", shape_str(input), ")");
      output_padding[i] = requested[i] - smallest;
    }
  }
  if constexpr (D == 1)
    return kiln::conv_transpose1d(input, weight, bias, options.stride(), options.padding(), output_padding,
                                  options.groups(), options.dilation());
  else
    return kiln::conv_transpose2d(input, weight, bias, options.stride(), options.padding(), output_padding,
                                  options.groups(), options.dilation());
}

template <size_t D, typename Derived>
void ConvTransposeNdImpl<D, Derived>::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::ConvTranspose" << D << "d(";
  print_conv_options(stream, options);
  if (!all_equal(options.output_padding(), 0)) stream << ", output_padding=" << options.output_padding();
  stream << ")";
}

template class ConvTransposeNdImpl<1, ConvTranspose1dImpl>;
template class ConvTransposeNdImpl<2, ConvTranspose2dImpl>;

// --- pooling ---

void MaxPool1dImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::MaxPool1d(kernel_size=" << options.kernel_size()
         << ", stride=" << options.stride() << ", padding=" << options.padding() << ", dilation=" << options.dilation()
         << ", ceil_mode=" << options.ceil_mode() << ")";
}

void AvgPool1dImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::AvgPool1d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
         << ", padding=" << options.padding() << ")";
}

void AdaptiveAvgPool1dImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::AdaptiveAvgPool1d(output_size=" << options.output_size() << ")";
}
void AdaptiveAvgPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::AdaptiveAvgPool2d(output_size=" << options.output_size() << ")";
}
template <size_t D, typename OutputSize>
void AdaptiveMaxPoolNdImpl<D, OutputSize>::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::AdaptiveMaxPool" << D << "d(output_size=" << options.output_size() << ")";
}
template class AdaptiveMaxPoolNdImpl<1, ExpandingArray<1>>;
template class AdaptiveMaxPoolNdImpl<2, ExpandingArrayWithOptionalElem<2>>;

// --- channel dropout ---

#define KILN_CHANNEL_DROPOUT_DEFINITIONS(Name)                                                                       \
  Name##Impl::Name##Impl(const DropoutOptions& options_) : options(options_) {                                       \
    KILN_CHECK(options.p() >= 0 && options.p() <= 1,                                                                 \
               #Name ": dropout probability has to be between 0 and 1, but got ", options.p());                      \
  }                                                                                                                  \
  void Name##Impl::pretty_print(std::ostream& stream) const {                                                        \
    stream << std::boolalpha << "kiln::nn::" #Name "(p=" << options.p() << ", inplace=" << options.inplace() << ")"; \
  }
KILN_CHANNEL_DROPOUT_DEFINITIONS(Dropout1d)
KILN_CHANNEL_DROPOUT_DEFINITIONS(Dropout2d)
KILN_CHANNEL_DROPOUT_DEFINITIONS(Dropout3d)
#undef KILN_CHANNEL_DROPOUT_DEFINITIONS

// --- Upsample ---

Tensor UpsampleImpl::forward(const Tensor& input) {
  return functional::interpolate(input, functional::InterpolateFuncOptions()
                                            .size(options.size())
                                            .scale_factor(options.scale_factor())
                                            .mode(options.mode())
                                            .align_corners(options.align_corners()));
}

void UpsampleImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Upsample(";
  auto print_list = [&stream](const auto& values) {
    stream << "[";
    for (size_t i = 0; i < values.size(); ++i) stream << (i ? ", " : "") << values[i];
    stream << "]";
  };
  if (options.scale_factor()) {
    stream << "scale_factor=";
    print_list(*options.scale_factor());
  } else if (options.size()) {
    stream << "size=";
    print_list(*options.size());
  }
  stream << ", mode=" << options.mode().name() << ")";
}

}  // namespace kiln::nn
