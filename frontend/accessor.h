// libtorch's TensorAccessor and PackedTensorAccessor32/64: a[i][j] indexing over a CPU tensor's
// memory with its sizes and strides, the dtype and dimension checked once by Tensor::accessor.
// The memory is data_ptr's: pending work runs first, and writes through it are what later ops read
// (as in libtorch, writing through an accessor is not an in-place op: no version bump).
#pragma once
#include <cstddef>
#include <cstdint>

namespace kiln {

template <typename T>
struct DefaultPtrTraits {
  typedef T* PtrType;
};
template <typename T>
struct RestrictPtrTraits {
  typedef T* __restrict__ PtrType;
};

// The view below dimension 0: sizes and strides borrowed from the accessor that made it.
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class TensorAccessorBase {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  TensorAccessorBase(PtrType data, const index_t* sizes, const index_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  index_t size(index_t i) const { return sizes_[i]; }
  index_t stride(index_t i) const { return strides_[i]; }
  PtrType data() { return data_; }
  const PtrType data() const { return data_; }

 protected:
  PtrType data_;
  const index_t* sizes_;
  const index_t* strides_;
};

template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class TensorAccessor : public TensorAccessorBase<T, N, PtrTraits, index_t> {
 public:
  using TensorAccessorBase<T, N, PtrTraits, index_t>::TensorAccessorBase;
  TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    return {this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1};
  }
  const TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    return {this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1};
  }
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
class TensorAccessor<T, 1, PtrTraits, index_t> : public TensorAccessorBase<T, 1, PtrTraits, index_t> {
 public:
  using TensorAccessorBase<T, 1, PtrTraits, index_t>::TensorAccessorBase;
  T& operator[](index_t i) { return this->data_[this->strides_[0] * i]; }
  const T& operator[](index_t i) const { return this->data_[this->strides_[0] * i]; }
};

// The packed form holds its sizes and strides by value (libtorch passes it to CUDA kernels).
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class GenericPackedTensorAccessor {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  GenericPackedTensorAccessor(PtrType data, const int64_t* sizes, const int64_t* strides) : data_(data) {
    for (size_t i = 0; i < N; ++i) {
      sizes_[i] = index_t(sizes[i]);
      strides_[i] = index_t(strides[i]);
    }
  }
  index_t size(index_t i) const { return sizes_[i]; }
  index_t stride(index_t i) const { return strides_[i]; }
  PtrType data() { return data_; }
  const PtrType data() const { return data_; }
  TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    return {data_ + strides_[0] * i, sizes_ + 1, strides_ + 1};
  }
  const TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    return {data_ + strides_[0] * i, sizes_ + 1, strides_ + 1};
  }

 private:
  PtrType data_;
  index_t sizes_[N];
  index_t strides_[N];
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
class GenericPackedTensorAccessor<T, 1, PtrTraits, index_t> {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  GenericPackedTensorAccessor(PtrType data, const int64_t* sizes, const int64_t* strides)
      : data_(data), size_(index_t(sizes[0])), stride_(index_t(strides[0])) {}
  index_t size(index_t) const { return size_; }
  index_t stride(index_t) const { return stride_; }
  PtrType data() { return data_; }
  const PtrType data() const { return data_; }
  T& operator[](index_t i) { return data_[stride_ * i]; }
  const T& operator[](index_t i) const { return data_[stride_ * i]; }

 private:
  PtrType data_;
  index_t size_, stride_;
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int32_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, int64_t>;

}  // namespace kiln
