#include "runtime/version.h"

namespace kiln {
const char* version() { return KILN_VERSION; }
}  // namespace kiln
