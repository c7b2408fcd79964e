// Internal to frontend/: how ops turn tensors into IR operands and IR nodes back into tensors.
#pragma once
#include <initializer_list>

#include "frontend/tensor.h"
#include "tracer/storage.h"

namespace kiln::detail {

// The tensors an internal op is given: a view of the caller's braced list or TensorList (as
// libtorch's TensorList, an ArrayRef), so that recording an op allocates no vector for them. A
// braced list holds references, not copies: copying a Tensor is a locked add on its reference
// count and another when the copy dies, which was a large part of a tiny op's cost. (A temporary
// in the list, as `{a.to(t)}`, lives until the end of the call's full expression.)
class Tensors {
 public:
  struct Ref {
    Ref(const Tensor& t) : tensor(&t) {}
    const Tensor* tensor;
  };
  class iterator {
   public:
    iterator(const Tensors* ts, size_t i) : ts_(ts), i_(i) {}
    const Tensor& operator*() const { return (*ts_)[i_]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const iterator& o) const { return i_ != o.i_; }

   private:
    const Tensors* ts_;
    size_t i_;
  };

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // by design: arguments only
  Tensors(std::initializer_list<Ref> l) : refs_(l.begin()), size_(l.size()) {}
#pragma GCC diagnostic pop
  Tensors(const TensorList& v) : list_(v.data()), size_(v.size()) {}
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size_}; }
  size_t size() const { return size_; }
  const Tensor& operator[](size_t i) const { return refs_ ? *refs_[i].tensor : list_[i]; }

 private:
  const Ref* refs_ = nullptr;
  const Tensor* list_ = nullptr;
  size_t size_;
};

// The IR operand reading tensor `t`: its storage's current content, seen through t's view.
ir::Operand operand(const Tensor& t);

// t's view expanded to `target` as Tensor::expand would (broadcast dimensions read with stride 0).
ir::View expanded_view(const Tensor& t, IntArrayRef target);

// A contiguous tensor over a new storage whose content is `node`.
Tensor wrap(ir::NodePtr node);

// Records one IR node over `inputs` (each read through its view, which must already have the
// shape the op expects) and returns its output as a new tensor. No autograd: see primitive().
// With `broadcast`, each input is read through its view expanded to `shape` (expanded_view):
// what an elementwise op does when no gradient needs the expanded tensors themselves.
struct Attrs {
  std::vector<int64_t> ints;
  double scalar = 0;
};
Tensor record(ir::Op op, Tensors inputs, Shape shape, ScalarType dtype, Attrs attrs = {}, bool broadcast = false);

// A number as a 0-dim tensor (a Const node) for an op to read, as `0.5` in x * 0.5. No flush
// writes it (its readers fold it in), and recent values are reused, so a loop of `x * 0.5`
// records nothing for the number after its first step. The reference is the calling thread's
// and stays valid while it makes fewer than kRetiredConstants new ones: for passing to an op
// (a copy of a Tensor costs a locked instruction, and another when it dies), not for keeping.
inline constexpr int kRetiredConstants = 64;
const Tensor& constant(const Scalar& value, ScalarType dtype);

// Makes `n`, a Const of its dtype, hold `value` as the kernels will use it: an int64 exactly, and
// an integer as float32 rounded once (through a double, 2^62 + 2^38 + 1 rounded twice).
void set_const_value(ir::Node& n, const Scalar& value);
// Whether `value` converts to `dtype`: a floating one into int64 must be in its range, not NaN (a
// fill with it is an error in libtorch: "value cannot be converted to type int64_t without
// overflow").
bool converts_without_overflow(const Scalar& value, ScalarType dtype);

// A tensor sharing t's storage with another view (no autograd: see views.cpp).
Tensor alias(const Tensor& t, Shape sizes, Shape strides, int64_t offset);

// A recorded Input node: `buffer` holds its value, computed already (host data, a data_ptr).
ir::NodePtr record_input(Shape shape, ScalarType dtype, BufferPtr buffer);

// A contiguous copy of `sizes` elements of host data (from_blob is the caller's memory itself).
Tensor copy_of_host_data(const void* data, IntArrayRef sizes, ScalarType dtype);
// Host fills from kiln's generator, which replicates libtorch's CPU mt19937 stream (creation.cpp).
void fill_uniform(void* data, ScalarType dtype, int64_t n, double from, double to);
void fill_normal(void* data, ScalarType dtype, int64_t n, double mean, double stdv);
void fill_bernoulli(float* data, int64_t n, double p);

// Zeros already in memory (an Input node), where zeros() is a lazy constant that folds into its
// consumers. Optimizer state starts so: its first update then runs the kernels of every later one
// instead of compiling its own.
Tensor zeros_in_memory(const Tensor& like);

// Normalizes a possibly negative dim against `rank`, naming `op` if it is out of range.
// A 0-d tensor answers to dim 0 and -1 as if it had one dimension, as in PyTorch.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);
// The same for ops that read the dimension's size (size, slice, split...): a 0-d tensor has none.
int64_t wrap_existing_dim(const Tensor& t, int64_t dim, const char* op);
std::string shape_str(const Tensor& t);  // "[2, 3] float32"

}  // namespace kiln::detail
