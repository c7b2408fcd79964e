#include "runtime/shared_library.h"

#include <dlfcn.h>

namespace kiln {

SharedLibrary::SharedLibrary(std::initializer_list<const char*> paths, bool global) {
  if (paths.size() > 0) name_ = *paths.begin();
  for (const char* path : paths) {
    handle_ = dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (handle_) return;
    const char* error = dlerror();
    open_error_ = error ? error : "not found";
  }
}

void* SharedLibrary::address(std::initializer_list<const char*> names) {
  if (handle_)
    for (const char* name : names)
      if (void* p = dlsym(handle_, name)) return p;
  if (names.size() > 0) missing_ += (missing_.empty() ? "" : ", ") + std::string(*names.begin());
  return nullptr;
}

}  // namespace kiln
