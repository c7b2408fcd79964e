// Gloo's algorithm classes (AllreduceRing and the rest, Debian's libgloo-dev), as ProcessGroupGloo
// runs its collectives (internal; built with KILN_HAVE_GLOO). Gloo's options API (gloo::allreduce
// and the rest) costs about a millisecond per call on loopback where these classes take a tenth
// of that (perf/RESULTS.md), so each collective's instance is made once and kept.
//
// An instance takes its message slots from the context when made, so every rank must make the
// same instances in the same order: instances are kept per (collective, dtype, count, op or root),
// never per pointer (a tensor's address differs between ranks, and from one call to the next), in
// a bounded cache whose evictions, being least recently used, are the same on every rank. The
// ring all-reduce moves data through memory of its own and reduces into whatever pointer it is
// given; halving-doubling and the broadcast bind their memory when made, so their instances own
// memory that a call copies into and out of. All-gathers are all-reduces (see allgather()). What
// the ring cannot take (floating-point sums past two ranks, buffers past `ring_max_bytes`) takes
// halving-doubling, whose results are the same bits on every rank. Every call waits for its own
// sends, and a peer that leaves right after its call does not fail this rank's (gloo_algorithms.cpp).
//
// Messages wait the pairs' timeout: the context's when the group connected. A call with another
// timeout goes through the options API, which takes one per call.
#pragma once
#if KILN_HAVE_GLOO
#include <gloo/context.h>
#include <gloo/types.h>

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <tuple>

#include "frontend/distributed/process_group.h"

namespace kiln::distributed::detail {

// Calls f with a value of the C++ type Gloo moves `dtype` as.
template <typename F>
void with_gloo_element_type(ScalarType dtype, const std::string& call, F&& f) {
  if (dtype == kFloat)
    f(float{});
  else if (dtype == kDouble)
    f(double{});
  else if (dtype == kLong)
    f(int64_t{});
  else if (dtype == kInt)
    f(int32_t{});
  else if (dtype == kByte || dtype == kBool)
    f(uint8_t{});
  else if (dtype == kChar)
    f(int8_t{});
  else if (dtype == kHalf)
    f(gloo::float16{});
  else if (dtype == kBFloat16)  // kiln's: adds and compares through float, as gloo::float16 does
    f(BFloat16{});
  else
    throw Error(call + ": dtype " + dtype_name(dtype) + " is not supported by the gloo backend");
}

class GlooAlgorithms {
 public:
  // `ring_max_bytes`: all-reduces up to this size take the ring (on more than two ranks, of
  // integers only), the others halving-doubling.
  GlooAlgorithms(std::shared_ptr<gloo::Context> context, size_t ring_max_bytes);
  ~GlooAlgorithms();
  GlooAlgorithms(const GlooAlgorithms&) = delete;
  GlooAlgorithms& operator=(const GlooAlgorithms&) = delete;

  // Each returns false where the classes do not take the call (see above; and buffers of 2 GiB or
  // more: they count bytes in an int); the caller then uses the options API.
  bool allreduce(ScalarType dtype, void* data, size_t count, ReduceOp op);  // AVG sums
  bool broadcast(void* data, size_t bytes, int root);
  bool allgather(const void* input, void* output, size_t bytes);  // output: `bytes` per rank, in rank order
  void barrier();

  // The ring's limit where KILN_GLOO_RING_MAX_BYTES sets none, for `ranks` ranks.
  static size_t default_ring_max_bytes(int ranks);

  struct Entry;

 private:
  using Key = std::tuple<int, int, size_t, int>;  // collective, dtype, count, op or root
  template <typename Make>
  Entry& find(const Key& key, size_t held_bytes, Make&& make);

  std::shared_ptr<gloo::Context> context_;
  size_t ring_max_bytes_;
  struct Kept {
    Key key;
    std::unique_ptr<Entry> entry;
    size_t held_bytes;
  };
  std::list<Kept> used_;  // the most recently used first
  std::map<Key, std::list<Kept>::iterator> index_;
  size_t held_bytes_ = 0;
};

}  // namespace kiln::distributed::detail
#endif
