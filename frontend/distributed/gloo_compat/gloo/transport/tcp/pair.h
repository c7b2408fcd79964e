// Debian's libgloo-dev installs gloo/transport/tcp/pair.h but not gloo/common/memory.h, which that
// header includes, so gloo/transport/tcp/buffer.h cannot be included as shipped. tcp::Buffer needs
// only the name of Pair (it holds a pointer): this file stands in for the header, on the include
// path of frontend/distributed/gloo_algorithms.cpp alone (CMakeLists.txt).
#pragma once

namespace gloo::transport::tcp {
class Pair;
}  // namespace gloo::transport::tcp
