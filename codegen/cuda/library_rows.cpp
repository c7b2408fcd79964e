// CUDA C for the library kernels that work a whole row at once, a block per row: the orderings
// (sort, topk, kthvalue, median, mode: positions of a stable sort of the row) and the value scans
// (cumsum, cumprod, logcumsumexp). Their meaning is codegen/scan_sort.cpp's, row by row; the
// calling convention is source.h's.
#include <sstream>

#include "codegen/cuda/library.h"
#include "codegen/cuda/ops.h"
#include "runtime/error.h"

namespace kiln::codegen::cuda {
namespace {

using ir::Node;
using ir::Op;

// The sort's device functions. A value becomes an unsigned key whose order is libtorch's (numbers
// ascending, -0 equal to 0, NaN above every number and equal to NaN); a pair (key, position) is
// unique, so sorting pairs is a stable sort of the values. A row of kSortTile or fewer is sorted in
// shared memory by a bitonic network; a longer one tile by tile into the workspace, then merged
// in log2(length / tile) passes, each element's place found by a binary search of the other run.
constexpr const char* kSortHelpers = R"cuda(
__device__ __forceinline__ u64 kiln_order_key(double v) {
  if (isnan(v)) return ~0ULL;
  const u64 b = (u64)__double_as_longlong(v == 0 ? 0.0 : v);
  return b >> 63 ? ~b : b | 0x8000000000000000ULL;
}
__device__ __forceinline__ u64 kiln_order_key(i64 v) { return (u64)v ^ 0x8000000000000000ULL; }
__device__ __forceinline__ u64 kiln_order_key(bool v) { return v ? 1ULL : 0ULL; }
__device__ __forceinline__ bool kiln_before(u64 ka, i64 pa, u64 kb, i64 pb) { return ka < kb || (ka == kb && pa < pb); }

// Sorts n (a power of two) pairs in shared memory, the block's threads together.
__device__ void kiln_bitonic_sort(u64* keys, int* at, int n) {
  for (int size = 2; size <= n; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < n / 2; i += blockDim.x) {
        const int lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
        if (kiln_before(keys[hi], at[hi], keys[lo], at[lo]) == ((lo & size) == 0)) {
          const u64 k = keys[lo];
          keys[lo] = keys[hi], keys[hi] = k;
          const int p = at[lo];
          at[lo] = at[hi], at[hi] = p;
        }
      }
      __syncthreads();
    }
}

// A sorted row: its keys and positions, in shared memory (shared_at) or in the workspace (at).
struct kiln_sorted_row {
  const u64* keys;
  const int* shared_at;
  const i64* at;
  __device__ i64 position(i64 j) const { return at ? at[j] : (i64)shared_at[j]; }
};

// Sorts the row of `length` whose j-th key is key_of(j). `work` holds 4 * length words where the
// row is longer than a tile. Every thread of the block calls it, and gets the same row.
template <class KeyOf>
__device__ kiln_sorted_row kiln_sort_row(KeyOf key_of, i64 length, u64* keys, int* at, u64* work) {
  u64 *ka = work, *kb = work + length;
  i64 *pa = (i64*)(work + 2 * length), *pb = (i64*)(work + 3 * length);
  for (i64 t0 = 0; t0 < length; t0 += KILN_SORT_TILE) {
    const int n = (int)(length - t0 < KILN_SORT_TILE ? length - t0 : KILN_SORT_TILE);
    int padded = 1;
    while (padded < n) padded <<= 1;
    for (int i = threadIdx.x; i < padded; i += blockDim.x) {
      keys[i] = i < n ? key_of(t0 + i) : ~0ULL;  // padding sorts after every element
      at[i] = i < n ? i : 0x7fffffff;
    }
    __syncthreads();
    kiln_bitonic_sort(keys, at, padded);
    if (length <= KILN_SORT_TILE) return kiln_sorted_row{keys, at, nullptr};
    for (int i = threadIdx.x; i < n; i += blockDim.x) ka[t0 + i] = keys[i], pa[t0 + i] = t0 + at[i];
    __syncthreads();
  }
  for (i64 width = KILN_SORT_TILE; width < length; width *= 2) {
    for (i64 e = threadIdx.x; e < length; e += blockDim.x) {
      const i64 start = e / width * width, mate = start ^ width;  // runs start at multiples of width
      const u64 k = ka[e];
      const i64 p = pa[e];
      i64 lo = mate < length ? mate : length, hi = mate + width < length ? mate + width : length;
      const i64 base = lo;
      while (lo < hi) {
        const i64 mid = lo + (hi - lo) / 2;
        if (kiln_before(ka[mid], pa[mid], k, p))
          lo = mid + 1;
        else
          hi = mid;
      }
      const i64 dest = (start < mate ? start : mate) + (e - start) + (lo - base);
      kb[dest] = k, pb[dest] = p;
    }
    __syncthreads();
    u64* k = ka;
    ka = kb, kb = k;
    i64* p = pa;
    pa = pb, pb = p;
  }
  return kiln_sorted_row{ka, nullptr, pa};
}
)cuda";

// The product of `sizes(d)` over d in [from, rank) but `skip`, as C.
template <typename Size>
std::string product(Size size, size_t from, size_t rank, size_t skip) {
  std::string p = "1";
  for (size_t d = from; d < rank; ++d)
    if (d != skip) p += " * " + size(d);
  return p;
}

// The rows along the dim: their `length` and number, the step along one in the input and in the
// output.
void row_locals(std::ostringstream& out, const Node& n) {
  const size_t axis = size_t(n.ints[0]), rank = n.shape.size();
  const ViewParams in{"in0_", rank}, o{"out_", rank};
  auto in_size = [&](size_t d) { return in.size(d); };
  auto out_size = [&](size_t d) { return o.size(d); };
  out << "  const long long length = " << in.size(axis) << ", rows = " << product(in_size, 0, rank, axis)
      << ", step = " << in.stride(axis) << ", out_step = " << product(out_size, axis + 1, rank, rank) << ";\n";
}

// A loop over the rows (`for_row`, which names the row `row`), and the row's first element in
// the input (`first`) and in the output (`out_first`).
void begin_rows(std::ostringstream& out, const Node& n, const std::string& for_row) {
  const size_t axis = size_t(n.ints[0]), rank = n.shape.size();
  const ViewParams in{"in0_", rank}, o{"out_", rank};
  out << "  " << for_row << " {\n";
  out << "    long long rest = row, first = " << in.offset() << ", out_first = 0, out_stride = 1;\n";
  for (size_t d = rank; d-- > 0;) {
    if (d == axis) {
      out << "    out_stride *= " << o.size(d) << ";\n";
      continue;
    }
    out << "    {\n      const long long c = rest % " << in.size(d) << ";\n      rest /= " << in.size(d) << ";\n";
    out << "      first += c * " << in.stride(d) << ";\n      out_first += c * out_stride;\n";
    out << "      out_stride *= " << o.size(d) << ";\n    }\n";
  }
}

}  // namespace

std::string sort_rows_source(const Node& n, const std::string& name) {
  const ScalarType t = n.inputs[0].node->dtype;
  const bool floating = t == kFloat || t == kDouble;
  std::ostringstream out;
  out << "#define KILN_SORT_TILE " << kSortTile << kSortHelpers << "\n";
  out << library_signature(n, name);
  out << "  __shared__ u64 keys[KILN_SORT_TILE];\n  __shared__ int at[KILN_SORT_TILE];\n";
  // Descending orders flip every key: NaN comes first, ties keep their order (positions ascend).
  const std::string descending = n.op == Op::SortIndex ? "attr1 != 0" : n.op == Op::TopKIndex ? "attr2 != 0" : "false";
  out << "  const u64 flip = " << descending << " ? ~0ULL : 0ULL;\n";
  row_locals(out, n);
  begin_rows(out, n, "for (long long row = blockIdx.x; row < rows; row += gridDim.x)");
  const std::string value = load_value(t, "in0[first + p * step]");
  const std::string key = t == kBool ? value : convert(Value{value, t}, floating ? kDouble : kLong);
  out << "    u64* const work_row = length > KILN_SORT_TILE ? work + 4 * length * blockIdx.x : work;\n";
  out << "    const kiln_sorted_row sorted = kiln_sort_row([&](long long p) { return kiln_order_key(" << key
      << ") ^ flip; }, length, keys, at, work_row);\n";
  switch (n.op) {
    case Op::SortIndex:
    case Op::TopKIndex:  // the k first of the row (k: the output's extent along the dim)
      out << "    const long long count = "
          << (n.op == Op::SortIndex ? "length" : ViewParams{"out_", 0}.size(size_t(n.ints[0]))) << ";\n";
      out << "    for (long long j = threadIdx.x; j < count; j += blockDim.x) out[out_first + j * out_step] = "
             "sorted.position(j);\n";
      break;
    case Op::KthValueIndex:  // the k-th (1-based) of the ascending order
      out << "    if (threadIdx.x == 0) out[out_first] = sorted.position(attr1 - 1);\n";
      break;
    case Op::MedianIndex:  // the first NaN (median), or the lower median of the others (nanmedian)
      out << "    if (threadIdx.x == 0 && length > 0) {\n      long long numbers = length;\n";
      if (floating)  // NaNs sort last, their keys all ones
        out << "      long long lo = 0, hi = length;\n      while (lo < hi) {\n"
               "        const long long mid = lo + (hi - lo) / 2;\n"
               "        if (sorted.keys[mid] != ~0ULL) lo = mid + 1; else hi = mid;\n      }\n"
               "      numbers = lo;\n";
      out << "      out[out_first] = numbers < length && attr1 == 0 ? sorted.position(numbers) : "
             "sorted.position((numbers - 1) / 2);\n    }\n";
      break;
    case Op::ModeIndex:  // the last position of the longest run of equal values (NaN equals nothing)
      out << "    if (threadIdx.x == 0) {\n      long long run = 0, longest = 0, best = 0;\n"
             "      for (long long j = 0; j < length; ++j) {\n        ++run;\n"
             "        if (j == length - 1 || sorted.keys[j] != sorted.keys[j + 1]"
          << (floating ? " || sorted.keys[j] == ~0ULL" : "")
          << ") {\n          if (run > longest) best = sorted.position(j), longest = run;\n          run = 0;\n        "
             "}\n"
             "      }\n      out[out_first] = best;\n    }\n";
      break;
    default: throw Error(detail::concat("cuda: ", ir::op_name(n.op), " does not order rows"));
  }
  out << "    __syncthreads();  // the next row reuses the shared keys\n  }\n}\n";
  return out.str();
}

std::string scan_rows_source(const Node& n, const std::string& name) {
  const ScalarType t = n.inputs[0].node->dtype;
  const bool floating = t == kFloat || t == kDouble;
  const char* acc = floating ? "double" : "i64";
  // combine(earlier, later): sums and products in float64 (int64, wrapping); log-cum-sum-exp as
  // the interpreter's log_add_exp(later, earlier). Each is associative, so the scan may group.
  std::string combine, identity;
  if (n.op == Op::LogCumSumExp) {
    combine = "kiln_log_add_exp(b, a)", identity = "(-kiln_infinity())";
  } else if (n.op == Op::CumProd) {
    combine = floating ? "a * b" : "kiln_wrapping_mul(a, b)", identity = floating ? "1.0" : "1LL";
  } else {
    KILN_CHECK(n.op == Op::CumSum, "cuda: ", ir::op_name(n.op), " is not a scan of values");
    combine = floating ? "a + b" : "kiln_wrapping_add(a, b)", identity = floating ? "0.0" : "0LL";
  }
  const std::string value = convert(Value{load_value(t, "in0[first + p * step]"), t}, floating ? kDouble : kLong);
  const std::string stored = stored_value(n.dtype, convert(Value{"v", floating ? kDouble : kLong}, n.dtype));
  std::ostringstream out;
  out << "__device__ __forceinline__ " << acc << " kiln_scan_combine(" << acc << " a, " << acc << " b) { return "
      << combine << "; }\n";
  out << library_signature(n, name);
  out << "  __shared__ " << acc << " warp_totals[32];\n";
  out << "  const " << acc << " identity = " << identity << ";\n";
  row_locals(out, n);
  // Short rows: a thread walks each, in order, as the interpreter does.
  begin_rows(out, n,
             "if (length < " + std::to_string(kBlockScanLength) +
                 ") for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < rows; row += "
                 "(long long)blockDim.x * gridDim.x)");
  out << "    " << acc << " v = identity;\n";
  out << "    for (long long p = 0; p < length; ++p) {\n      v = kiln_scan_combine(v, " << value
      << ");\n      out[out_first + p * out_step] = " << stored << ";\n    }\n  }\n";
  // Long rows: a block each, blockDim.x elements at a time: a scan within each warp by shuffles,
  // one of the warps' totals, and the carry of the row's earlier elements.
  begin_rows(out, n, "else for (long long row = blockIdx.x; row < rows; row += gridDim.x)");
  out << "    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;\n";
  out << "    " << acc << " carry = identity;\n";
  out << "    for (long long base = 0; base < length; base += blockDim.x) {\n";
  out << "      const long long p = base + threadIdx.x;\n";
  out << "      " << acc << " v = p < length ? " << value << " : identity;\n";
  out << "      for (int d = 1; d < 32; d <<= 1) {\n        const " << acc
      << " o = kiln_shuffle_up(v, d);\n        if (lane >= (unsigned)d) v = kiln_scan_combine(o, v);\n      }\n";
  out << "      if (lane == 31) warp_totals[warp] = v;\n      __syncthreads();\n";
  out << "      if (warp == 0) {\n        " << acc << " w = lane < warps ? warp_totals[lane] : identity;\n";
  out << "        for (int d = 1; d < 32; d <<= 1) {\n          const " << acc
      << " o = kiln_shuffle_up(w, d);\n          if (lane >= (unsigned)d) w = kiln_scan_combine(o, w);\n        }\n";
  out << "        if (lane < warps) warp_totals[lane] = w;\n      }\n      __syncthreads();\n";
  out << "      if (warp > 0) v = kiln_scan_combine(warp_totals[warp - 1], v);\n";
  out << "      v = kiln_scan_combine(carry, v);\n";
  out << "      if (p < length) out[out_first + p * out_step] = " << stored << ";\n";
  out << "      carry = kiln_scan_combine(carry, warp_totals[warps - 1]);\n      __syncthreads();\n    }\n  }\n}\n";
  return out.str();
}

bool rows_launch_dims(const Node& n, int sm_count, LaunchDims& dims) {
  const bool sort = library_workspace(n), scan = n.op == Op::CumSum || n.op == Op::CumProd || n.op == Op::LogCumSumExp;
  if (!sort && !scan) return false;
  const int64_t length = n.inputs[0].view.sizes[size_t(n.ints[0])], sms = std::max(sm_count, 1);
  const int64_t rows = numel_of(n.inputs[0].view.sizes) / std::max<int64_t>(length, 1);
  const bool block_rows = sort || length >= kBlockScanLength;
  const int64_t blocks = block_rows ? rows : (rows + kBlockThreads - 1) / kBlockThreads;
  int64_t grid = std::max<int64_t>(1, std::min<int64_t>(blocks, sms * 8));
  if (sort && length > kSortTile) {  // 32 bytes per element and block: fewer blocks for long rows
    constexpr int64_t kMostWorkspace = int64_t(256) << 20;
    grid = std::max<int64_t>(1, std::min<int64_t>(grid, kMostWorkspace / (32 * length)));
    dims.workspace_bytes = uint64_t(grid) * 4 * uint64_t(length) * 8;
  }
  dims.grid = uint32_t(grid);
  return true;
}

}  // namespace kiln::codegen::cuda
