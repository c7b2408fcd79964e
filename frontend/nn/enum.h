// libtorch's enum-like tags (torch::kMean, torch::kReLU, torch::kFanIn, ...): each tag is its own
// type, so an option can accept exactly the tags that make sense for it.
#pragma once
#include <string>
#include <type_traits>

namespace kiln {

namespace enumtype {
#define KILN_ENUM_TAG(Tag, text)               \
  struct Tag {                                 \
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
KILN_ENUM_TAG(kZeros, "zeros")
KILN_ENUM_TAG(kReflect, "reflect")
KILN_ENUM_TAG(kReplicate, "replicate")
KILN_ENUM_TAG(kCircular, "circular")
KILN_ENUM_TAG(kNearest, "nearest")
KILN_ENUM_TAG(kNearestExact, "nearest-exact")
KILN_ENUM_TAG(kBilinear, "bilinear")
KILN_ENUM_TAG(kBicubic, "bicubic")
KILN_ENUM_TAG(kTrilinear, "trilinear")
KILN_ENUM_TAG(kArea, "area")
KILN_ENUM_TAG(kConstant, "constant")
KILN_ENUM_TAG(kBatchMean, "batchmean")
KILN_ENUM_TAG(kMax, "max")
KILN_ENUM_TAG(kBorder, "border")
KILN_ENUM_TAG(kReflection, "reflection")
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
inline constexpr enumtype::kZeros kZeros{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};
inline constexpr enumtype::kNearest kNearest{};
inline constexpr enumtype::kNearestExact kNearestExact{};
inline constexpr enumtype::kBilinear kBilinear{};
inline constexpr enumtype::kBicubic kBicubic{};
inline constexpr enumtype::kTrilinear kTrilinear{};
inline constexpr enumtype::kArea kArea{};
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kBatchMean kBatchMean{};
inline constexpr enumtype::kMax kMax{};
inline constexpr enumtype::kBorder kBorder{};
inline constexpr enumtype::kReflection kReflection{};

// One tag out of a fixed set (libtorch's c10::variant of enumtype tags), kept by name: only the
// listed tags convert to it, so `padding_mode(torch::kMean)` does not compile.
template <typename... Tags>
class EnumChoice {
 public:
  template <typename Tag, typename = std::enable_if_t<(std::is_same_v<Tag, Tags> || ...)>>
  /* implicit */ EnumChoice(Tag) : name_(Tag::name()) {}
  const std::string& name() const { return name_; }
  template <typename Tag>
  bool is() const {
    return name_ == Tag::name();
  }
  bool operator==(const EnumChoice& o) const { return name_ == o.name_; }

 private:
  std::string name_;
};
using PaddingMode = EnumChoice<enumtype::kZeros, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;
using PadMode = EnumChoice<enumtype::kConstant, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;
using InterpolateMode = EnumChoice<enumtype::kNearest, enumtype::kLinear, enumtype::kBilinear, enumtype::kBicubic,
                                   enumtype::kTrilinear, enumtype::kArea, enumtype::kNearestExact>;

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
