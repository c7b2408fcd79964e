// torch::indexing: Tensor::index and Tensor::index_put_ with libtorch's index objects
// (`x.index({Slice(1, None, 2), None, "...", 0, mask})`). Integers, slices, None and Ellipsis make
// views; tensor indices (int64 positions or bool masks) gather with index_select, whose gradient
// scatters back, and index_put_ writes through the same positions.
#pragma once
#include <optional>
#include <ostream>

#include "frontend/tensor.h"

namespace kiln::indexing {

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};
inline constexpr std::nullopt_t None = std::nullopt;

// start:stop:step, each optional as in Python (None: from the start, to the end, step 1).
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt);
  int64_t start() const { return start_; }
  int64_t stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  int64_t start_, stop_, step_;
};
std::ostream& operator<<(std::ostream& os, const Slice& s);

class TensorIndex {
 public:
  enum class Kind : uint8_t { None, Ellipsis, Integer, Boolean, Slice, Tensor };
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}
  TensorIndex(const char* ellipsis);  // "..."
  TensorIndex(int64_t i) : kind_(Kind::Integer), integer_(i) {}
  TensorIndex(int i) : TensorIndex(int64_t(i)) {}
  TensorIndex(bool b) : kind_(Kind::Boolean), boolean_(b) {}
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}
  TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_ellipsis() const { return kind_ == Kind::Ellipsis; }
  bool is_integer() const { return kind_ == Kind::Integer; }
  bool is_boolean() const { return kind_ == Kind::Boolean; }
  bool is_slice() const { return kind_ == Kind::Slice; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};
std::ostream& operator<<(std::ostream& os, const TensorIndex& i);

}  // namespace kiln::indexing
