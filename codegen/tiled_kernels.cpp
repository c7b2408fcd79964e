#include "codegen/tiled_kernels.h"

#include <cstring>

#include "codegen/per_op_loops.h"
#include "codegen/strided_walk.h"
#include "runtime/parallel.h"

namespace kiln::codegen {
namespace {

using namespace per_op;
using fusion::is_read;
using fusion::Kernel;
using fusion::read_index;
using ir::OpKind;

// Elements a chunk's per-element values hold: the buffers of a chunk stay in L1/L2.
constexpr int64_t kChunk = 1024;
// Rows longer than this run node by node (a row is one chunk: its phases read it whole).
constexpr int64_t kMaxRow = int64_t(1) << 16;
// Buffers of one chunk, all nodes together, above which a kernel runs node by node.
constexpr int64_t kMaxArena = int64_t(8) << 20;

// How a node of the kernel is computed, decided once per launch.
struct Step {
  ir::Node* node;
  enum class Kind { Const, Elementwise, Reduce } kind;
  bool per_row = false;
  Compute compute = Compute::Float64;
  int64_t slot = -1;                       // its chunk buffer's offset in the arena (-1: an output)
  void* out = nullptr;                     // an output's buffer
  alignas(8) unsigned char value[8] = {};  // a Const's value, stored as its dtype
};

// Where an operand's values for one chunk come from.
struct Source {
  enum class Kind { Strided, Contiguous, RowBroadcast } kind;
  const void* base;
  ScalarType dtype;
  int64_t offset = 0;              // Strided: the read's; Contiguous: from base
  const Shape* sizes = nullptr;    // Strided
  const Shape* strides = nullptr;  // Strided
  int64_t begin = 0;               // Strided: the chunk's first flat element
  int64_t inner = 1;               // RowBroadcast: each value's repeats
};

// A strided operand's `count` values where they lie in memory as T, one contiguous run, else null.
template <typename T>
const T* in_place(const Source& s, int64_t count) {
  const Shape& sizes = *s.sizes;
  const Shape& strides = *s.strides;
  const size_t last = sizes.size() - 1;
  if (!stores_as<T>(s.dtype) || strides[last] != 1 || s.begin % sizes[last] + count > sizes[last]) return nullptr;
  int64_t offset = s.offset;
  for (int64_t d = int64_t(last), rest = s.begin; d >= 0; --d) {
    offset += rest % sizes[size_t(d)] * strides[size_t(d)];
    rest /= sizes[size_t(d)];
  }
  return static_cast<const T*>(s.base) + offset;
}

// The sum of n floats: blocks of 64 summed in 8 float lanes of 8 values each, the lanes and the
// blocks added in double: within a few float ulps of the double sum (the compiled kernels' blocked
// sums are no closer), without converting the values first.
double float_sum(const float* __restrict__ x, int64_t n) {
  constexpr int kLanes = 8, kBlock = 64;
  double total = 0;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    float lanes[kLanes] = {};
    for (int k = 0; k < kBlock; k += kLanes)
      for (int j = 0; j < kLanes; ++j) lanes[j] += x[i + k + j];
    for (float l : lanes) total += l;
  }
  for (; i < n; ++i) total += x[i];
  return total;
}

// The operand's `count` values as T: in place where they are T and contiguous, else in `scratch`.
template <typename T>
const T* gather(const Source& s, int64_t count, T* scratch) {
  switch (s.kind) {
    case Source::Kind::Contiguous:
      if (stores_as<T>(s.dtype)) return static_cast<const T*>(s.base) + s.offset;
      load_run(s.base, s.dtype, s.offset, 1, count, scratch);
      return scratch;
    case Source::Kind::RowBroadcast:
      for (int64_t r = 0; r * s.inner < count; ++r) load_run(s.base, s.dtype, r, 0, s.inner, scratch + r * s.inner);
      return scratch;
    case Source::Kind::Strided:
      if (const T* direct = in_place<T>(s, count)) return direct;
      for_each_run(*s.sizes, *s.strides, s.offset, s.begin, count,
                   [&](int64_t off, int64_t stride, int64_t len, int64_t pos) {
                     load_run(s.base, s.dtype, off, stride, len, scratch + pos);
                   });
      return scratch;
  }
  return scratch;
}

class TiledKernel {
 public:
  explicit TiledKernel(const Kernel& k) : k_(k) {}

  bool run() {
    if (!plan()) return false;
    for (Step& s : steps_)
      if (s.kind != Step::Kind::Const && s.slot < 0) {
        s.node->result = make_buffer(s.node->numel() * int64_t(element_size(s.node->dtype)));
        s.out = s.node->result->data();
      }
    parallel_for_ranges(rows_, grain_for_work(rows_, rows_ * inner_, kGrain), [&](int64_t lo, int64_t hi) {
      thread_local std::vector<unsigned char> arena;
      if (arena.size() < size_t(arena_bytes_ + 64)) arena.resize(size_t(arena_bytes_ + 64));
      auto* base = arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64) % 64;
      for (const Step& s : steps_)  // a constant's values, the same in every chunk
        if (s.kind == Step::Kind::Const) fill_const(s, base + s.slot);
      for (int64_t r0 = lo; r0 < hi; r0 += rows_per_chunk_) run_chunk(r0, std::min(rows_per_chunk_, hi - r0), base);
    });
    return true;
  }

 private:
  // Decides each node's step and the chunk's shape; false where the kernel cannot run tiled.
  bool plan() {
    if (k_.kind == Kernel::Kind::Library) return false;
    // The domain's dims in the order the chunks walk them: the kept dims (rows), then the reduced
    // ones. Reduced dims between kept ones (pooling windows, batch norm's statistics) move last,
    // where the kernel writes per-row values only (per-element outputs keep the domain's order)
    // and the innermost dim is reduced (its runs stay runs).
    const size_t rank = k_.domain.size();
    std::vector<size_t> order;
    for (size_t d = 0; d < rank; ++d)
      if (!reduced(d)) order.push_back(d);
    const size_t split = order.size();
    for (size_t d = 0; d < rank; ++d)
      if (reduced(d)) order.push_back(d);
    bool moved = false;
    for (size_t d = 0; d < rank; ++d) moved |= order[d] != d;
    // A reduction over leading dims (column sums) walks its rows in place, node by node, faster.
    if (moved && !reduced(rank - 1)) return false;
    if (moved)
      for (int o : k_.outputs)
        if (!k_.nodes[size_t(o)].per_row) return false;
    for (size_t d : order) domain_.push_back(k_.domain[d]);
    kept_sizes_ = Shape(domain_.begin(), domain_.begin() + split);
    if (kept_sizes_.empty()) kept_sizes_ = {1};
    rows_ = numel_of(kept_sizes_);
    inner_ = numel_of(domain_) / std::max<int64_t>(rows_, 1);
    if (rows_ == 0 || inner_ == 0 || inner_ > kMaxRow) return false;
    for (const fusion::Read& r : k_.reads) {
      Shape strides;
      for (size_t d : order) strides.push_back(r.strides[d]);
      Shape kept(strides.begin(), strides.begin() + split);
      if (kept.empty()) kept = {0};
      read_strides_.push_back(std::move(strides));
      kept_strides_.push_back(std::move(kept));
    }
    rows_per_chunk_ = std::max<int64_t>(1, kChunk / inner_);
    const int64_t chunk = chunk_ = rows_per_chunk_ * inner_;
    int64_t bytes = 0;
    // Buffers of n values of `size` bytes, each three cache lines past a multiple of 64 bytes
    // beyond the last: buffers a whole number of pages apart would share the cache's sets, and
    // a load would wait on a store to another buffer at the same page offset (4K aliasing).
    auto take = [&](int64_t n, int64_t size) {
      const int64_t at = bytes;
      bytes += (n * size + 63) / 64 * 64 + 3 * 64;
      return at;
    };
    std::vector<bool> is_output(k_.nodes.size(), false);
    for (int o : k_.outputs) is_output[size_t(o)] = true;
    for (size_t i = 0; i < k_.nodes.size(); ++i) {
      const fusion::KernelNode& kn = k_.nodes[i];
      ir::Node& n = *kn.node;
      Step s{&n, Step::Kind::Elementwise};
      s.per_row = kn.per_row;
      const OpKind kind = ir::op_kind(n.op);
      if (n.op == ir::Op::Const) {
        if (is_output[i]) return false;
        s.kind = Step::Kind::Const;
        write_const(n, s.value);
      } else if (n.computed()) {
        return false;
      } else if (kind == OpKind::Reduce) {
        if (!kn.per_row || kn.args.size() != 1 || reads_per_row(kn.args[0])) return false;
        s.kind = Step::Kind::Reduce;
        s.compute = computes_on_int64(n) ? Compute::Int64 : Compute::Float64;
      } else if (kind == OpKind::Unary || kind == OpKind::Binary || kind == OpKind::Compare || kind == OpKind::Select) {
        s.compute = compute_type(n);
        if (!has_loop(s.compute, n.op)) return false;
        for (int a : kn.args)  // a per-row value reads per-row values only
          if (kn.per_row && !is_read(a) && !k_.nodes[size_t(a)].per_row &&
              k_.nodes[size_t(a)].node->op != ir::Op::Const)
            return false;
      } else {
        return false;
      }
      const int64_t elements = s.per_row ? rows_ : rows_ * inner_;
      if (s.kind != Step::Kind::Const && is_output[i] && n.numel() != elements) return false;
      if (s.kind == Step::Kind::Const || !is_output[i])
        s.slot = take(s.per_row ? rows_per_chunk_ : chunk, int64_t(element_size(n.dtype)));
      steps_.push_back(s);
    }
    for (int64_t& at : scratch_) at = take(chunk, 8);
    arena_bytes_ = bytes;
    return bytes <= kMaxArena;
  }

  bool reduced(size_t d) const { return k_.kind == Kernel::Kind::Reduction && k_.reduced[d]; }

  bool reads_per_row(int arg) const { return !is_read(arg) && k_.nodes[size_t(arg)].per_row; }

  static bool has_loop(Compute c, ir::Op op) {
    switch (c) {
      case Compute::Float32: return loop_for<float>(op) != nullptr;
      case Compute::Float64: return loop_for<double>(op) != nullptr;
      case Compute::Int64: return loop_for<int64_t>(op) != nullptr;
    }
    return false;
  }

  static void write_const(const ir::Node& n, unsigned char* to) {
    with_dtype(n.dtype, [&](auto tag) {
      constexpr ScalarType dtype = decltype(tag)::value;
      const Storage<dtype> v =
          is_integer(dtype) ? store_as<dtype, int64_t>(n.int_scalar) : store_as<dtype, double>(n.scalar);
      std::memcpy(to, &v, sizeof v);
    });
  }

  // A chunk of a constant's value, as its dtype.
  void fill_const(const Step& s, unsigned char* to) const {
    with_dtype(s.node->dtype, [&](auto tag) {
      using S = Storage<decltype(tag)::value>;
      S v;
      std::memcpy(&v, s.value, sizeof v);
      std::fill(reinterpret_cast<S*>(to), reinterpret_cast<S*>(to) + chunk_, v);
    });
  }

  // Node i's values for the chunk of rows [r0, r0 + rows).
  void* values(size_t i, int64_t r0, unsigned char* arena) const {
    const Step& s = steps_[i];
    if (s.slot >= 0) return arena + s.slot;
    const int64_t first = s.per_row ? r0 : r0 * inner_;
    return static_cast<unsigned char*>(s.out) + first * int64_t(element_size(s.node->dtype));
  }

  // Where argument `arg` of a node (per row or per element) finds its values for the chunk.
  Source source(int arg, bool per_row, int64_t r0, unsigned char* arena) const {
    if (is_read(arg)) {
      const size_t r = size_t(read_index(arg));
      const fusion::Read& read = k_.reads[r];
      Source src{Source::Kind::Strided, read.node->result->data(), read.node->dtype, read.offset};
      src.sizes = per_row ? &kept_sizes_ : &domain_;
      src.strides = per_row ? &kept_strides_[r] : &read_strides_[r];
      src.begin = per_row ? r0 : r0 * inner_;
      return src;
    }
    const Step& s = steps_[size_t(arg)];
    Source src{Source::Kind::Contiguous, values(size_t(arg), r0, arena), s.node->dtype};
    if (s.per_row && !per_row) {
      src.kind = Source::Kind::RowBroadcast;
      src.inner = inner_;
    }
    return src;
  }

  void run_chunk(int64_t r0, int64_t rows, unsigned char* arena) const {
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& s = steps_[i];
      switch (s.compute) {
        case Compute::Float32: step<float>(i, r0, rows, arena); break;
        case Compute::Float64: step<double>(i, r0, rows, arena); break;
        case Compute::Int64: step<int64_t>(i, r0, rows, arena); break;
      }
    }
  }

  template <typename T>
  void step(size_t i, int64_t r0, int64_t rows, unsigned char* arena) const {
    const Step& s = steps_[i];
    if (s.kind == Step::Kind::Const) return;
    const fusion::KernelNode& kn = k_.nodes[i];
    T* scratch[4];
    for (int j = 0; j < 4; ++j) scratch[j] = reinterpret_cast<T*>(arena + scratch_[j]);
    void* out = values(i, r0, arena);
    if (s.kind == Step::Kind::Reduce) {
      const Source arg = source(kn.args[0], false, r0, arena);
      T* acc = scratch[3];
      if constexpr (std::is_same_v<T, double>) {
        const ir::Op combine = ir::facts(s.node->op).combine;
        if (arg.dtype == kFloat && combine != ir::Op::Mul) {  // read as float, not converted first
          const float* x = gather<float>(arg, rows * inner_, reinterpret_cast<float*>(scratch[0]));
          const float identity = float(ir::reduction_identity(s.node->op));
          for (int64_t r = 0; r < rows; ++r) {
            const float* row = x + r * inner_;
            acc[r] = combine == ir::Op::Add   ? float_sum(row, inner_)
                     : combine == ir::Op::Max ? fold<ir::Op::Max>(row, inner_, identity)
                                              : fold<ir::Op::Min>(row, inner_, identity);
          }
          store_run(acc, out, s.node->dtype, 0, rows);
          return;
        }
      }
      const T* x = gather<T>(arg, rows * inner_, scratch[0]);
      T identity;
      if constexpr (std::is_same_v<T, int64_t>)
        identity = ir::wrapping_reduction_identity(s.node->op);
      else
        identity = T(ir::reduction_identity(s.node->op));
      fold_rows(ir::facts(s.node->op).combine, x, rows, identity, acc);
      store_run(acc, out, s.node->dtype, 0, rows);
      return;
    }
    const int64_t count = s.per_row ? rows : rows * inner_;
    const T* in[3] = {};
    for (size_t j = 0; j < kn.args.size(); ++j)
      in[j] = gather<T>(source(kn.args[j], s.per_row, r0, arena), count, scratch[j]);
    const bool direct = stores_as<T>(s.node->dtype);
    T* result = direct ? static_cast<T*>(out) : scratch[3];
    loop_for<T>(s.node->op)(in, result, count, s.node->inputs[0].node->dtype);
    if (!direct) store_run(result, out, s.node->dtype, 0, count);
  }

  template <typename T>
  void fold_rows(ir::Op combine, const T* x, int64_t rows, T identity, T* acc) const {
    auto each = [&](auto fold_one) {
      for (int64_t r = 0; r < rows; ++r) acc[r] = fold_one(x + r * inner_, inner_, identity);
    };
    if (combine == ir::Op::Add) return each(fold<ir::Op::Add, T>);
    if (combine == ir::Op::Mul) return each(fold<ir::Op::Mul, T>);
    if (combine == ir::Op::Max) return each(fold<ir::Op::Max, T>);
    each(fold<ir::Op::Min, T>);
  }

  const Kernel& k_;
  std::vector<Step> steps_;
  Shape domain_;                     // the kernel's domain, kept dims first (see plan)
  Shape kept_sizes_;                 // its kept dims (rows), {1} when every dim is reduced
  std::vector<Shape> read_strides_;  // per read, its strides along domain_
  std::vector<Shape> kept_strides_;  // and along the kept dims
  int64_t rows_ = 0, inner_ = 1, rows_per_chunk_ = 1, chunk_ = 1;
  int64_t scratch_[4] = {}, arena_bytes_ = 0;  // scratch: three operands and a result, as T
};

}  // namespace

bool run_tiled(const Kernel& k) { return TiledKernel(k).run(); }

}  // namespace kiln::codegen
