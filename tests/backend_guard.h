// Runs a test's body on one backend: the interpreter or the Halide backend (lazy, kernels compiled
// before they run), the previous configuration restored after.
#pragma once
#include <kiln/kiln.h>

#include "runtime/config.h"

struct BackendGuard {
  explicit BackendGuard(const char* name) : saved(kiln::config()) {
    kiln::config().backend = name;
    kiln::config().compile_in_background = false;
  }
  ~BackendGuard() { kiln::config() = saved; }
  kiln::Config saved;
};
