#include "codegen/halide/tune_db.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "codegen/halide/compiler.h"
#include "runtime/disk_cache.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/version.h"

namespace kiln::codegen::halide {
namespace {

constexpr const char* kExt = ".tune";

std::string entry_key(const std::string& key, const std::string& bucket) {
  return "tuned schedule of\n" + key + "\nfor sizes " + bucket;
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

std::string size_bucket(const fusion::Kernel& k) {
  std::string b = "b";
  for (size_t d = 0; d < k.domain.size(); ++d) {
    int exponent = 0;
    while ((int64_t(1) << exponent) < k.domain[d]) ++exponent;
    if (d > 0) b += '.';
    b += std::to_string(exponent);
  }
  return b;
}

std::string tuned_kernel_key(const std::string& key, const std::string& bucket, const std::string& schedule) {
  return key + "\ntuned " + schedule + " for sizes " + bucket;
}

std::string TuneRecord::text() const {
  std::ostringstream os;
  os.precision(17);
  os << "schedule " << schedule << "\nbucket " << bucket << "\nkernel " << kernel << "\nhand_us " << hand_us
     << "\ntuned_us " << tuned_us << "\nseconds " << seconds << "\ncandidates " << candidates << "\nrejected "
     << rejected << "\nfailed " << failed << "\nkey " << key;
  return os.str();
}

TuneRecord TuneRecord::parse(const std::string& text) {
  TuneRecord r;
  std::istringstream is(text);
  auto field = [&](const char* name) {
    std::string line;
    KILN_CHECK(std::getline(is, line) && line.rfind(std::string(name) + " ", 0) == 0,
               "tune: a database entry lacks its line \"", name, " ...\"");
    return line.substr(std::string(name).size() + 1);
  };
  auto number = [&](const char* name) {
    const std::string v = field(name);
    try {
      size_t end = 0;
      const double x = std::stod(v, &end);
      KILN_CHECK(end == v.size(), "");
      return x;
    } catch (const std::exception&) {
      throw Error(detail::concat("tune: a database entry's ", name, " is \"", v, "\", not a number"));
    }
  };
  r.schedule = field("schedule");
  r.bucket = field("bucket");
  r.kernel = field("kernel");
  r.hand_us = number("hand_us");
  r.tuned_us = number("tuned_us");
  r.seconds = number("seconds");
  r.candidates = int(number("candidates"));
  r.rejected = int(number("rejected"));
  r.failed = int(number("failed"));
  r.key = field("key");
  for (std::string more; std::getline(is, more);) r.key += "\n" + more;  // the key runs to the end
  return r;
}

struct TuningDb::Impl {
  DiskCache cache;
};

TuningDb::TuningDb()
    : impl_(std::make_shared<Impl>(Impl{DiskCache("kiln-" + std::string(version()) + "-" + compiler_revision() +
                                                  "-halide14-" + host_cpu_id() + "-tuning")})) {}

const std::string& TuningDb::dir() const { return impl_->cache.dir(); }

std::optional<TuneRecord> TuningDb::find(const std::string& key, const std::string& bucket) const {
  const auto path = impl_->cache.find(entry_key(key, bucket), kExt);
  if (!path) return std::nullopt;
  try {
    const auto text = read_text(*path);
    KILN_CHECK(text, "tune: cannot read ", *path);
    TuneRecord r = TuneRecord::parse(*text);
    KILN_CHECK(r.key == key && r.bucket == bucket, "tune: ", *path, " is the entry of another kernel");
    return r;
  } catch (const Error& e) {
    log().warn("damaged tuning database entry {}: {}; ignoring it", *path, e.what());
    return std::nullopt;
  }
}

void TuningDb::store(const TuneRecord& record) const {
  const std::string tmp = impl_->cache.temp_path(kExt);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << record.text();
    if (!out.flush()) {
      log().warn("tune: cannot write {}", tmp);
      return;
    }
  }
  impl_->cache.store(entry_key(record.key, record.bucket), kExt, tmp);
}

std::vector<TuneRecord> TuningDb::all() const {
  std::vector<TuneRecord> records;
  std::error_code ec;
  const std::string meta_ext = std::string(kExt) + ".meta";
  for (auto it = std::filesystem::directory_iterator(dir(), ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string path = it->path().string();
    if (path.size() < meta_ext.size() || path.compare(path.size() - meta_ext.size(), meta_ext.size(), meta_ext) != 0)
      continue;
    try {
      const auto text = read_text(path);
      if (!text) continue;
      const CacheSidecar sidecar = parse_cache_sidecar(*text, kExt, path);
      const std::string prefix = "tuned schedule of\n";
      const size_t sizes = sidecar.key.rfind("\nfor sizes ");
      if (sidecar.key.rfind(prefix, 0) != 0 || sizes == std::string::npos) continue;
      if (auto r = find(sidecar.key.substr(prefix.size(), sizes - prefix.size()), sidecar.key.substr(sizes + 11)))
        records.push_back(*r);
    } catch (const Error& e) {
      log().warn("damaged tuning database entry {}: {}; ignoring it", path, e.what());
    }
  }
  return records;
}

TuningDb& tuning_db() {
  static TuningDb db;
  return db;
}

}  // namespace kiln::codegen::halide
