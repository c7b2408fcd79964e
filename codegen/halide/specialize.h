// Size specialization as a decision. A kernel whose extents are small in a way its schedule uses
// (fusion::Kernel::narrow_rows: rows of 8 or fewer, as a pooling window's; tiny_inner: an inner
// dim of 4 or fewer) gets a key and a kernel of its own with those extents compiled in. Where the
// small sizes come from a smaller batch (a training loop's last partial batch of 5, say) rather
// than from the kernel's nature, that kernel would be compiled for a step or two: so, where the
// kernel's general form (the same structure with specialize_sizes off: what the full batches ran)
// is built, it serves at once (statistic kernels_served_general), and the specialized kernel is
// compiled in the background (kernels_specialized) only where it is known to pay:
//   - the tuning database has a record for the kernel in its size bucket: `kiln tune` measured it
//     against the general kernel, and the schedule "general" says it does not pay;
//   - else a measured rule: once the general kernel has run at these sizes for as long as a
//     compile takes (Config::specialize_after_ms), as a ski rental buys once the rent paid equals
//     the price: the time lost to the general kernel is then at most about one compile.
// Where the general kernel is not built (a pooling window's kernel in a first step: small is its
// nature), the specialized kernel is compiled as any other kernel is.
#pragma once
#include <string>

#include "codegen/halide/launcher.h"
#include "fusion/kernel.h"

namespace kiln::codegen::halide {

// Whether `k`'s sizes specialize its kernel (narrow_rows or tiny_inner).
bool size_specialized(const fusion::Kernel& k);
// `k` for any sizes: a copy with specialize_sizes off (its nodes and reads are k's).
fusion::Kernel general_kernel(const fusion::Kernel& k);

// For a size-specialized kernel `k` (key `key`) whose own kernel is neither in memory nor on disk:
// the general kernel if it is built (in memory, or loaded from disk), else null. Sends k's own
// kernel to the background compiler where the tuning database says it pays. The flushing thread's.
KernelFn general_for(const fusion::Kernel& k, const std::string& key);
// What a launch of the general kernel that general_for gave for `k` took: the measured rule's input.
void general_ran(const fusion::Kernel& k, const std::string& key, double us);

}  // namespace kiln::codegen::halide
