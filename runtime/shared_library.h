#pragma once
// A shared library opened with dlopen at first use, and its entry points bound by name. kiln never
// links CUDA's libraries (driver, NVRTC, cuBLAS, NCCL): it builds, installs and passes its tests on
// machines without them, and says why a feature is off where one is missing.

#include <initializer_list>
#include <string>

namespace kiln {

class SharedLibrary {
 public:
  // Opens the first of `paths` that dlopen finds (a soname first, then where a toolkit installs).
  // The library is never closed: its threads and kernels may outlive any caller. `global` makes
  // its symbols visible to the libraries it opens in turn (Open MPI's plugins need libmpi's).
  explicit SharedLibrary(std::initializer_list<const char*> paths, bool global = false);

  bool opened() const { return handle_ != nullptr; }
  // The first path asked for, as the messages name the library.
  const std::string& name() const { return name_; }
  // dlerror's text for the last path tried, when none opened.
  const std::string& open_error() const { return open_error_; }

  // Binds `slot` to the first of `names` the library exports (a versioned name such as
  // cuMemAlloc_v2 before the plain one); a function missing is remembered in missing().
  template <typename Fn>
  void bind(Fn*& slot, std::initializer_list<const char*> names) {
    slot = reinterpret_cast<Fn*>(address(names));
  }
  // The address of the first of `names` the library exports (a function, or an object such as
  // Open MPI's predefined handles), or null, remembered in missing().
  void* address(std::initializer_list<const char*> names);
  // The entry points not found so far, comma-separated; "" when every bind succeeded.
  const std::string& missing() const { return missing_; }

 private:
  void* handle_ = nullptr;
  std::string name_;
  std::string open_error_;
  std::string missing_;
};

}  // namespace kiln
