#include "codegen/halide/compiler.h"

#include <cpuid.h>
#include <elf.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "runtime/config.h"
#include "runtime/disk_cache.h"
#include "runtime/error.h"
#include "runtime/hash.h"
#include "runtime/log.h"
#include "runtime/shared_library.h"

namespace kiln::codegen::halide {
namespace {

// Where the module is: KILN_HALIDE_COMPILER when set (and then only there), else the build
// tree's if it exists (the tests and benchmarks use the module built with them), else the
// installed one. Empty when there is none.
std::string module_path() {
  struct stat st;
  if (const std::string& set = config().halide_compiler; !set.empty()) return stat(set.c_str(), &st) == 0 ? set : "";
  for (const char* p : {KILN_HALIDE_COMPILER_BUILD_PATH, KILN_HALIDE_COMPILER_INSTALL_PATH})
    if (stat(p, &st) == 0) return p;
  return "";
}

struct Module {
  int (*compile_kernel)(const fusion::Kernel*, const char*, const char*, const char*, char*, size_t);
  int (*compile_kernel_scheduled)(const fusion::Kernel*, const char*, const char*, const char*, const char*, char*,
                                  size_t);
  int (*compile_runtime)(const char*, char*, size_t);
  int (*target_name)(char*, size_t);
};

Module load() {
  const std::string path = module_path();
  const std::string& set = config().halide_compiler;
  KILN_CHECK(!path.empty(), "halide: the compiler module was not found at ",
             !set.empty() ? set : KILN_HALIDE_COMPILER_BUILD_PATH " or " KILN_HALIDE_COMPILER_INSTALL_PATH,
             !set.empty() ? " (KILN_HALIDE_COMPILER)" : " (KILN_HALIDE_COMPILER names another)");
  const auto start = std::chrono::steady_clock::now();
  // Local: its hidden copy of kiln's code and Halide's symbols stay out of the program's way.
  SharedLibrary lib({path.c_str()});
  KILN_CHECK(lib.opened(), "halide: could not load the compiler module: ", lib.open_error());
  uint64_t (*abi)() = nullptr;
  Module m;
  lib.bind(abi, {"kiln_halide_compiler_abi"});
  lib.bind(m.compile_kernel, {"kiln_halide_compile_kernel"});
  lib.bind(m.compile_kernel_scheduled, {"kiln_halide_compile_kernel_scheduled"});
  lib.bind(m.compile_runtime, {"kiln_halide_compile_runtime"});
  lib.bind(m.target_name, {"kiln_halide_target_name"});
  KILN_CHECK(lib.missing().empty(), "halide: the compiler module ", path, " has no ", lib.missing());
  KILN_CHECK(abi() == kCompilerAbi, "halide: the compiler module ", path, " belongs to another build of kiln (abi ",
             abi(), ", expected ", kCompilerAbi, ")");
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log().debug("loaded the Halide compiler from {} in {:.1f} ms", path, ms);
  return m;
}

// Loaded once. A failed load is remembered: each compile after it fails with the same message
// (and the backend runs that kernel on the interpreter).
const Module& module() {
  static std::string failure;
  static const Module m = [] {
    try {
      return load();
    } catch (const Error& e) {
      failure = e.what();
      return Module{};
    }
  }();
  KILN_CHECK(failure.empty(), failure);
  return m;
}

void check(int rc, const char* error) { KILN_CHECK(rc == 0, error); }

#ifdef __SANITIZE_THREAD__
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif

// Held around each call into the module. Under ThreadSanitizer the memory accesses of a call are
// not checked: Halide and LLVM are not instrumented, so TSan sees none of their synchronization,
// only the libc and libstdc++ calls they make, and it reported hundreds of races inside them
// between threads compiling at once (scripts/sanitize.sh thread). Locks are still seen, and so is
// everything kiln does around the call.
struct OutsideTsan {
#ifdef __SANITIZE_THREAD__
  OutsideTsan() { __tsan_ignore_thread_begin(); }
  ~OutsideTsan() { __tsan_ignore_thread_end(); }
#endif
};

}  // namespace

void compile_kernel_object(const fusion::Kernel& kernel, const std::string& name, const std::string& object_path,
                           const std::string& dump_dir) {
  char error[4096] = "";
  [[maybe_unused]] const OutsideTsan outside;
  check(module().compile_kernel(&kernel, name.c_str(), object_path.c_str(), dump_dir.c_str(), error, sizeof error),
        error);
}

void compile_kernel_object(const fusion::Kernel& kernel, const std::string& schedule, const std::string& name,
                           const std::string& object_path, const std::string& dump_dir) {
  char error[4096] = "";
  [[maybe_unused]] const OutsideTsan outside;
  check(module().compile_kernel_scheduled(&kernel, schedule.c_str(), name.c_str(), object_path.c_str(),
                                          dump_dir.c_str(), error, sizeof error),
        error);
}

void compile_runtime_object(const std::string& object_path) {
  char error[4096] = "";
  [[maybe_unused]] const OutsideTsan outside;
  check(module().compile_runtime(object_path.c_str(), error, sizeof error), error);
}

std::string compiler_target() {
  char name[4096] = "";
  [[maybe_unused]] const OutsideTsan outside;
  check(module().target_name(name, sizeof name), name);
  return name;
}

namespace {

// The GNU build ID the linker wrote into the module (a hash of its contents), from the ELF notes
// near the file's start; empty when it has none.
std::string build_id(std::ifstream& file) {
  Elf64_Ehdr header;
  if (!file.read(reinterpret_cast<char*>(&header), sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_phentsize != sizeof(Elf64_Phdr))
    return "";
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  file.seekg(std::streamoff(header.e_phoff));
  if (!file.read(reinterpret_cast<char*>(segments.data()), std::streamsize(segments.size() * sizeof(Elf64_Phdr))))
    return "";
  for (const auto& segment : segments) {
    if (segment.p_type != PT_NOTE || segment.p_filesz > 4096) continue;
    std::string notes(segment.p_filesz, '\0');
    file.seekg(std::streamoff(segment.p_offset));
    if (!file.read(notes.data(), std::streamsize(notes.size()))) return "";
    // Each note: a header, its name and its description, each padded to 4 bytes.
    for (size_t at = 0; at + sizeof(Elf64_Nhdr) <= notes.size();) {
      Elf64_Nhdr note;
      std::memcpy(&note, notes.data() + at, sizeof note);
      const size_t name = at + sizeof note, desc = name + ((note.n_namesz + 3) & ~3u);
      if (desc + note.n_descsz > notes.size()) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && notes.compare(name, 4, std::string("GNU\0", 4)) == 0)
        return notes.substr(desc, note.n_descsz);
      at = desc + ((note.n_descsz + 3) & ~3u);
    }
  }
  return "";
}

}  // namespace

std::string compiler_revision() {
  // Any rebuild that changes the module's code (lowering, scheduling, the kiln code it links)
  // names a new folder, and a copy of the same build finds the old one: its build ID, else a hash
  // of all its bytes (~2.5 ms of every start for its ~400 KB; the ID is a few hundred bytes read).
  std::ifstream file(module_path(), std::ios::binary);
  if (!file) return "none";
  std::string id = build_id(file);
  if (id.empty()) {
    file.clear();
    file.seekg(0, std::ios::end);
    id.assign(size_t(file.tellg()), '\0');
    file.seekg(0).read(id.data(), std::streamsize(id.size()));
  }
  return std::to_string(fnv1a64(id.data(), id.size()));
}

std::string host_cpu_id() {
  // Read once: the backend asks twice (the prebuilt runtime's check, the cache's folder), and
  // CPUID traps to the hypervisor on a VM.
  static const std::string id = [] {
    // The words Halide reads to choose a target's features: the vendor, leaf 1's feature flags,
    // leaf 7's (subleaves 0 and 1), and which register states the OS saves (XCR0: AVX and
    // AVX-512 need its consent). Not leaf 1's eax and ebx: they hold the core's number.
    std::vector<unsigned> words;
    unsigned a = 0, b = 0, c = 0, d = 0;
    __get_cpuid_count(0, 0, &a, &b, &c, &d);
    words.insert(words.end(), {b, c, d});
    __get_cpuid_count(1, 0, &a, &b, &c, &d);
    const bool osxsave = c & (1u << 27);
    words.insert(words.end(), {c, d});
    for (unsigned sub : {0u, 1u}) {
      a = b = c = d = 0;
      __get_cpuid_count(7, sub, &a, &b, &c, &d);
      words.insert(words.end(), {a, b, c, d});
    }
    if (osxsave) {
      unsigned lo, hi;
      __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      words.push_back(lo);
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(words.data(), words.size() * 4)));
    return std::string("x86-") + hex;
  }();
  return id;
}

}  // namespace kiln::codegen::halide
