// A whole file's bytes, mapped read-only while the object lives. The readers of untrusted files
// (safetensors, IDX, kernel cache entries) parse from memory, so that their fuzz targets
// (tests/fuzz) feed the same parser; mapping spares copying a large file first. Header-only, with
// the standard library and runtime/error.h alone, so that idx.cpp still compiles on its own.
#pragma once
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "runtime/error.h"

namespace kiln {

class MappedFile {
 public:
  // `where` starts every error message, e.g. "read_idx: /data/images.gz: ".
  MappedFile(const std::string& path, const std::string& where) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    KILN_CHECK(fd >= 0, where, "cannot open the file: ", std::strerror(errno));
    struct stat st = {};
    const bool stat_ok = ::fstat(fd, &st) == 0;
    const int stat_errno = errno;
    if (!stat_ok || !S_ISREG(st.st_mode)) {  // a folder or a pipe has no size to map
      ::close(fd);
      KILN_CHECK(stat_ok, where, "cannot read the file: ", std::strerror(stat_errno));
      KILN_CHECK(false, where, "is not a regular file");
    }
    size_ = size_t(st.st_size);
    if (size_ > 0) {  // mmap refuses a length of 0
      void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      const int err = errno;
      ::close(fd);
      KILN_CHECK(data != MAP_FAILED, where, "cannot map the file: ", std::strerror(err));
      data_ = data;
    } else {
      ::close(fd);
    }
  }
  ~MappedFile() {
    if (data_) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kiln
