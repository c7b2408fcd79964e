// The tuning database: for each kernel structure (its kernel cache key) and size bucket, the
// schedule `kiln tune` chose and what it measured. Entries live in the disk cache
// (runtime/disk_cache.h: atomic writes, checksums) in a folder of their own named like the kernel
// cache's (kiln's version, the compiler module's build, Halide, the CPU), so a change of any of
// them starts afresh. The tuned kernel itself is in the kernel cache, under tuned_kernel_key.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusion/kernel.h"

namespace kiln::codegen::halide {

// A kernel's sizes, coarsely: each extent of its domain rounded up to a power of two, as the
// exponents ("b7.10" for 100 x 1000). A schedule tuned for one size serves its bucket.
std::string size_bucket(const fusion::Kernel& k);

// The kernel cache key of `key` tuned with `schedule` for `bucket`: it says it is tuned.
std::string tuned_kernel_key(const std::string& key, const std::string& bucket, const std::string& schedule);

// The schedule of a size-specialized kernel (specialize.h) whose specialization does not pay: the
// general kernel serves its sizes.
inline constexpr const char* kGeneralSchedule = "general";

struct TuneRecord {
  std::string key;       // the kernel cache key of the hand-scheduled kernel
  std::string bucket;    // size_bucket
  std::string schedule;  // ScheduleChoice::text(); "hand" when no candidate beat the hand schedule;
                         // kGeneralSchedule
  std::string kernel;    // what it is, for reports: its kind and sizes
  double hand_us = 0;    // the hand schedule's time, interleaved with the tuned one's
  double tuned_us = 0;   // the chosen schedule's (hand_us when it is the hand one)
  double seconds = 0;    // time spent tuning it
  int candidates = 0;    // candidates built and measured
  int rejected = 0;      // candidates whose outputs differed from the hand schedule's
  int failed = 0;        // candidates that did not compile, or ran over their time limit

  bool tuned() const { return schedule != "hand"; }
  // Lines of "name value"; the key last (it may hold anything). parse() throws kiln::Error.
  std::string text() const;
  static TuneRecord parse(const std::string& text);
};

class TuningDb {
 public:
  TuningDb();
  // The record for `key` in `bucket`. A corrupt entry is logged and ignored (nullopt).
  std::optional<TuneRecord> find(const std::string& key, const std::string& bucket) const;
  void store(const TuneRecord& record) const;
  // Every valid record, in no particular order.
  std::vector<TuneRecord> all() const;
  const std::string& dir() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};
TuningDb& tuning_db();

}  // namespace kiln::codegen::halide
