// libtorch's enum-like tags (torch::kMean, torch::kReLU, torch::kFanIn, ...): each tag is its own
// type, so an option can accept exactly the tags that make sense for it.
#pragma once
#include <string>

namespace kiln {

namespace enumtype {
#define KILN_ENUM_TAG(Tag, text) \
  struct Tag {                   \
    static const char* name() { return text; } \
  };
KILN_ENUM_TAG(kNone, "none")
KILN_ENUM_TAG(kMean, "mean")
KILN_ENUM_TAG(kSum, "sum")
KILN_ENUM_TAG(kFanIn, "fan_in")
KILN_ENUM_TAG(kFanOut, "fan_out")
KILN_ENUM_TAG(kLinear, "linear")
KILN_ENUM_TAG(kSigmoid, "sigmoid")
KILN_ENUM_TAG(kTanh, "tanh")
KILN_ENUM_TAG(kReLU, "relu")
KILN_ENUM_TAG(kLeakyReLU, "leaky_relu")
#undef KILN_ENUM_TAG
}  // namespace enumtype

inline constexpr enumtype::kNone kNone{};
inline constexpr enumtype::kMean kMean{};
inline constexpr enumtype::kSum kSum{};
inline constexpr enumtype::kFanIn kFanIn{};
inline constexpr enumtype::kFanOut kFanOut{};
inline constexpr enumtype::kLinear kLinear{};
inline constexpr enumtype::kSigmoid kSigmoid{};
inline constexpr enumtype::kTanh kTanh{};
inline constexpr enumtype::kReLU kReLU{};
inline constexpr enumtype::kLeakyReLU kLeakyReLU{};

// A loss reduction: libtorch's tags (torch::kSum), ATen's enum (torch::Reduction::Sum, what
// torch::nll_loss and friends take) or kiln's strings ("sum") all convert to it. The name is
// checked where the loss runs, so the error names the loss.
class Reduction {
 public:
  enum Kind { None, Mean, Sum, END };
  Reduction(Kind kind) : name_(kind == None ? "none" : kind == Mean ? "mean" : kind == Sum ? "sum" : "END") {}
  Reduction(enumtype::kNone) : name_("none") {}
  Reduction(enumtype::kMean) : name_("mean") {}
  Reduction(enumtype::kSum) : name_("sum") {}
  Reduction(std::string name) : name_(std::move(name)) {}
  Reduction(const char* name) : name_(name) {}
  const std::string& name() const { return name_; }
  operator const std::string&() const { return name_; }
  bool operator==(const Reduction& o) const { return name_ == o.name_; }

 private:
  std::string name_;
};

}  // namespace kiln
