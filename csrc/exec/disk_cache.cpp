#include "exec/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "exec/cache_trust.h"
#include "exec/metrics.h"
#include "exec/sha256.h"

namespace tpu::exec {

namespace {

constexpr char kMagic[8] = {'T', 'P', 'U', 'C', 'A', 'C', 'H', 'E'};
constexpr size_t kHeaderSize = 8 + 4 + 4 + 8 + 8;
constexpr size_t kChecksumSize = 32;
constexpr char kEntrySuffix[] = ".tpuc";
constexpr char kTempPrefix[] = ".tmp-";
constexpr int64_t kStaleTempSeconds = 3600;
constexpr int kRescanEveryWrites = 256;

std::mutex g_warning_mutex;
std::function<void(const std::string&)> g_warning_handler;

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

std::string errno_text() { return std::strerror(errno); }

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}
bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_entry_name(const std::string& name) {
  return name.size() == 64 + std::strlen(kEntrySuffix) && ends_with(name, kEntrySuffix);
}

// `<hex SHA-256 of format version and key>.tpuc`
std::string entry_name(const std::string& key) {
  Sha256 h;
  std::string version;
  put_u32(version, DiskCache::kFormatVersion);
  h.update(version);
  h.update(key);
  return to_hex(h.finish()) + kEntrySuffix;
}

// mkdir -p, making each missing directory 0700: the cache's parents may be made by us too
// (~/.cache on a fresh account), and a cache needs no one else's access.
bool make_dirs(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos < dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (r == 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

int64_t mtime_ns(const struct stat& st) {
  return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

struct FileInfo {
  std::string name;
  int64_t mtime_ns;
  uint64_t size;
};

// Calls `visit(name, stat)` for each entry or temp file (not followed if a link) of the directory
// open as `dir_fd`, until it returns false.
template <typename Visit>
void for_each_file(int dir_fd, Visit visit) {
  // A descriptor of its own: readdir moves the file offset, which a dup() would share.
  int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return;
  }
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    struct stat st;
    if (!is_entry_name(name) && !starts_with(name, kTempPrefix)) continue;
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!visit(name, st)) break;
  }
  ::closedir(d);
}

// Entries of the directory open as `dir_fd` (and, when `temps` is given, its temp files).
std::vector<FileInfo> list_dir(int dir_fd, std::vector<FileInfo>* temps) {
  std::vector<FileInfo> out;
  for_each_file(dir_fd, [&](const std::string& name, const struct stat& st) {
    const bool entry = is_entry_name(name);
    if (S_ISREG(st.st_mode) && (entry || temps))
      (entry ? out : *temps).push_back({name, mtime_ns(st), static_cast<uint64_t>(st.st_size)});
    return true;
  });
  return out;
}

// The warning for the first entry of the directory open as `dir_fd` that is not trusted
// (cache_trust.h), "" when all are: checked before anything is loaded from the directory.
std::string first_untrusted_entry(int dir_fd, const std::string& dir) {
  std::string warning;
  for_each_file(dir_fd, [&](const std::string& name, const struct stat& st) {
    if (is_entry_name(name)) warning = distrust_warning(st, CacheFileKind::Entry, dir + "/" + name);
    return warning.empty();
  });
  return warning;
}

std::string absolute(const std::string& dir) {
  if (dir.empty() || dir[0] == '/') return dir;
  char buf[4096];
  if (::getcwd(buf, sizeof buf) == nullptr) return dir;
  return std::string(buf) + "/" + dir;
}

bool env_false(const char* v) {
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "0" || s == "false" || s == "off" || s == "no";
}

}  // namespace

void set_cache_warning_handler(std::function<void(const std::string&)> handler) {
  std::lock_guard<std::mutex> lock(g_warning_mutex);
  g_warning_handler = std::move(handler);
}

void cache_warning(const std::string& message) {
  std::function<void(const std::string&)> handler;
  {
    std::lock_guard<std::mutex> lock(g_warning_mutex);
    handler = g_warning_handler;
  }
  if (handler) {
    handler(message);
  } else {
    std::fprintf(stderr, "torch_tpu: warning: %s\n", message.c_str());
    std::fflush(stderr);
  }
}

std::optional<uint64_t> parse_byte_size(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0 || pos > 19) return std::nullopt;
  uint64_t value = std::stoull(text.substr(0, pos));
  std::string unit = text.substr(pos);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (!unit.empty() && (unit.back() == 'i')) unit.pop_back();
  int shift = 0;
  if (unit.empty())
    shift = 0;
  else if (unit == "K" || unit == "k")
    shift = 10;
  else if (unit == "M" || unit == "m")
    shift = 20;
  else if (unit == "G" || unit == "g")
    shift = 30;
  else if (unit == "T" || unit == "t")
    shift = 40;
  else
    return std::nullopt;
  if (shift > 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

std::string default_cache_directory() {
  if (const char* dir = std::getenv("TORCH_TPU_CACHE_DIR"); dir != nullptr && *dir != '\0')
    return absolute(dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::string(xdg) + "/torch_tpu";
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') {
    if (struct passwd* pw = ::getpwuid(::getuid())) home = pw->pw_dir;
  }
  if (home == nullptr || *home == '\0') return {};
  return std::string(home) + "/.cache/torch_tpu";
}

// Parent directories are not checked. The cache directory is opened once and checked through
// that descriptor, and every entry is then opened, written, renamed and removed relative to it
// (openat and friends), never by path. Whoever can write a parent can rename the directory away
// or put another in its place, but that no longer changes which directory this process uses; a
// replacement made before the check must pass the check itself (owned by us, writable by no one
// else), and then holds nothing another user could have written.
struct DiskCache::Dir {
  Dir(int fd, std::string path) : fd(fd), path(std::move(path)) {}
  ~Dir() { ::close(fd); }
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  const int fd;
  const std::string path;
};

DiskCache::DiskCache(std::string directory, uint64_t max_bytes)
    : directory_(absolute(directory)), max_bytes_(max_bytes) {}

DiskCache DiskCache::from_environment() {
  std::string dir;
  const char* dir_env = std::getenv("TORCH_TPU_CACHE_DIR");
  // Set but empty: disabled.
  if (dir_env == nullptr || *dir_env != '\0') dir = default_cache_directory();
  if (env_false(std::getenv("TORCH_TPU_DISK_CACHE"))) dir.clear();
  uint64_t max_bytes = kDefaultMaxBytes;
  if (const char* m = std::getenv("TORCH_TPU_CACHE_MAX_BYTES"); m != nullptr && *m != '\0') {
    if (auto parsed = parse_byte_size(m)) {
      max_bytes = *parsed;
    } else {
      cache_warning(std::string("ignoring TORCH_TPU_CACHE_MAX_BYTES='") + m +
                    "' (expected a byte count such as 2147483648, 512M or 2G)");
    }
  }
  return DiskCache(dir, max_bytes);
}

bool DiskCache::enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !directory_.empty() && refused_.empty();
}

std::string DiskCache::directory() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return directory_;
}

uint64_t DiskCache::max_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_bytes_;
}

void DiskCache::set_directory(std::string directory) {
  std::lock_guard<std::mutex> lock(mutex_);
  directory_ = absolute(directory);
  dir_.reset();  // closed once no load or store still uses it
  refused_.clear();
  approx_total_ = -1;
  writes_since_scan_ = 0;
  warned_write_failure_ = false;
}

void DiskCache::set_max_bytes(uint64_t max_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  max_bytes_ = max_bytes;
  approx_total_ = -1;  // re-scan (and evict) on the next write
}

std::string DiskCache::entry_path(const std::string& key) const {
  return directory() + "/" + entry_name(key);
}

std::shared_ptr<const DiskCache::Dir> DiskCache::open_directory(bool create, std::string* problem) {
  std::string refusal;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (directory_.empty() || !refused_.empty()) return nullptr;
    if (dir_) return dir_;
    if (create && !make_dirs(directory_)) {
      if (problem) *problem = "cannot create the directory: " + errno_text();
      return nullptr;
    }
    const int fd = ::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      // Absent: nothing to load yet (the first store creates it).
      if (problem) *problem = "cannot open the directory: " + errno_text();
      return nullptr;
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      if (problem) *problem = "cannot stat the directory: " + errno_text();
      ::close(fd);
      return nullptr;
    }
    refusal = distrust_warning(st, CacheFileKind::Directory, directory_);
    if (refusal.empty()) refusal = first_untrusted_entry(fd, directory_);
    if (refusal.empty()) {
      dir_ = std::make_shared<const Dir>(fd, directory_);
      return dir_;
    }
    ::close(fd);
  }
  refuse(refusal);
  return nullptr;
}

void DiskCache::refuse(const std::string& warning) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!refused_.empty()) return;  // said once already
    refused_ = warning;
    dir_.reset();
  }
  counters().disk_errors++;
  cache_warning(warning);  // outside the lock: the handler may run Python
}

void DiskCache::drop_directory(const std::shared_ptr<const Dir>& dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (dir_ == dir) {
    dir_.reset();
    approx_total_ = -1;
  }
}

std::optional<std::string> DiskCache::load(const std::string& key) {
  const std::shared_ptr<const Dir> dir = open_directory(/*create=*/false, nullptr);
  if (!dir) return std::nullopt;
  const std::string name = entry_name(key);
  const std::string path = dir->path + "/" + name;
  // O_NOFOLLOW: a symbolic link is refused below, never followed. O_NONBLOCK: opening a FIFO
  // put in its place must not hang (it is refused as not a regular file).
  int fd = ::openat(dir->fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st{};
  if (fd < 0) {
    if (errno == ELOOP && ::fstatat(dir->fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
      refuse(distrust_warning(st, CacheFileKind::Entry, path));
    return std::nullopt;  // absent (or unreadable: treated as absent)
  }
  std::string data;
  std::string problem;
  if (::fstat(fd, &st) != 0) {
    problem = "cannot stat: " + errno_text();
  } else if (std::string distrust = distrust_warning(st, CacheFileKind::Entry, path); !distrust.empty()) {
    // Checked on the descriptor that would be read: what is read is what was checked (the scan
    // at first use saw the entries as they were then).
    ::close(fd);
    refuse(distrust);
    return std::nullopt;
  } else if (static_cast<uint64_t>(st.st_size) < kHeaderSize + kChecksumSize) {
    problem = "truncated: " + std::to_string(st.st_size) + " bytes";
  } else {
    data.resize(static_cast<size_t>(st.st_size));
    if (!read_all(fd, data.data(), data.size())) problem = "truncated while reading";
  }
  if (problem.empty()) {
    const uint64_t size = data.size();
    const uint64_t key_size = get_le(data.data() + 16, 8);
    const uint64_t payload_size = get_le(data.data() + 24, 8);
    if (std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) {
      problem = "not a torch_tpu cache entry (bad magic)";
    } else if (uint32_t v = static_cast<uint32_t>(get_le(data.data() + 8, 4)); v != kFormatVersion) {
      problem = "format version " + std::to_string(v) + ", expected " + std::to_string(kFormatVersion);
    } else if (key_size > size || payload_size > size ||
               kHeaderSize + key_size + payload_size + kChecksumSize != size) {
      const uint64_t described = kHeaderSize + key_size + payload_size + kChecksumSize;
      problem = std::string(described > size ? "truncated" : "size mismatch") + ": header describes " +
                std::to_string(described) + " bytes, file has " + std::to_string(size);
    } else {
      Sha256::Digest sum = sha256(std::string_view(data.data(), size - kChecksumSize));
      if (std::memcmp(sum.data(), data.data() + size - kChecksumSize, kChecksumSize) != 0) {
        problem = "checksum mismatch";
      } else if (std::string_view(data.data() + kHeaderSize, key_size) != key) {
        // A different key with the same SHA-256: never return its payload. Our store overwrites it.
        ::close(fd);
        return std::nullopt;
      } else {
        ::futimens(fd, nullptr);  // recently used (best effort: the directory may be read-only)
        ::close(fd);
        return data.substr(kHeaderSize + key_size, payload_size);
      }
    }
  }
  // Damaged: remove it, unless another process has meanwhile replaced it with a fresh entry.
  struct stat now;
  if (::fstatat(dir->fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino &&
      now.st_dev == st.st_dev)
    ::unlinkat(dir->fd, name.c_str(), 0);
  ::close(fd);
  counters().disk_errors++;
  cache_warning("discarded a damaged compile cache entry " + path + " (" + problem +
                "); it will be recompiled");
  return std::nullopt;
}

std::string DiskCache::write_entry(const Dir& dir, const std::string& name, const std::string& data,
                                   int* error) {
  static std::atomic<uint64_t> sequence{0};
  const auto nanos = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string temp = kTempPrefix + std::to_string(::getpid()) + "-" + std::to_string(sequence++) + "-" +
                           std::to_string(nanos);
  // 0600: readable by this user only (what it holds runs as this user's code).
  int fd = ::openat(dir.fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = errno;
    return "cannot create a file: " + errno_text();
  }
  std::string problem;
  bool ok = write_all(fd, data.data(), data.size()) && ::fsync(fd) == 0;
  if (!ok) problem = "write failed: " + errno_text();
  if (::close(fd) != 0 && ok) problem = "write failed: " + errno_text();
  if (problem.empty() && ::renameat(dir.fd, temp.c_str(), dir.fd, name.c_str()) != 0)
    problem = "rename failed: " + errno_text();
  if (!problem.empty()) {
    *error = errno;
    ::unlinkat(dir.fd, temp.c_str(), 0);
  }
  return problem;
}

bool DiskCache::store(const std::string& key, const std::string& payload) {
  std::string data;
  data.reserve(kHeaderSize + key.size() + payload.size() + kChecksumSize);
  data.append(kMagic, sizeof kMagic);
  put_u32(data, kFormatVersion);
  put_u32(data, 0);
  put_u64(data, key.size());
  put_u64(data, payload.size());
  data += key;
  data += payload;
  Sha256::Digest sum = sha256(data);
  data.append(reinterpret_cast<const char*>(sum.data()), sum.size());

  std::string problem;
  std::shared_ptr<const Dir> dir = open_directory(/*create=*/true, &problem);
  if (!dir && problem.empty()) return false;  // disabled, or refused (and said so once)
  if (dir) {
    int error = 0;
    problem = write_entry(*dir, entry_name(key), data, &error);
    if (error == ENOENT) {
      // The directory was removed while in use (`rm -rf` of the cache): make it again.
      drop_directory(dir);
      dir = open_directory(/*create=*/true, &problem);
      if (!dir && problem.empty()) return false;
      if (dir) problem = write_entry(*dir, entry_name(key), data, &error);
    }
  }
  if (!problem.empty()) {
    counters().disk_errors++;
    bool warn;
    std::string path;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      warn = !warned_write_failure_;
      warned_write_failure_ = true;
      path = directory_;
    }
    if (warn)
      cache_warning("cannot write the persistent compile cache in " + path + " (" + problem +
                    "); compiled programs are not being saved (set TORCH_TPU_CACHE_DIR to a "
                    "writable directory, or TORCH_TPU_DISK_CACHE=0)");
    return false;
  }
  counters().disk_writes++;
  evict_if_needed(dir, data.size());
  return true;
}

void DiskCache::evict_if_needed(const std::shared_ptr<const Dir>& dir, uint64_t written_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (dir != dir_) return;
  if (approx_total_ >= 0 && writes_since_scan_ < kRescanEveryWrites &&
      uint64_t(approx_total_) + written_bytes <= max_bytes_) {
    approx_total_ += written_bytes;
    ++writes_since_scan_;
    return;
  }
  std::vector<FileInfo> temps;
  std::vector<FileInfo> entries = list_dir(dir->fd, &temps);
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  for (const FileInfo& t : temps)  // left behind by a process killed mid-write
    if (now_ns - t.mtime_ns > kStaleTempSeconds * 1000000000) ::unlinkat(dir->fd, t.name.c_str(), 0);
  uint64_t total = 0;
  for (const FileInfo& e : entries) total += e.size;
  if (total > max_bytes_) {
    std::sort(entries.begin(), entries.end(),
              [](const FileInfo& a, const FileInfo& b) { return a.mtime_ns < b.mtime_ns; });
    const uint64_t target = max_bytes_ - max_bytes_ / 10;
    for (const FileInfo& e : entries) {
      if (total <= target) break;
      if (::unlinkat(dir->fd, e.name.c_str(), 0) == 0 || errno == ENOENT) {
        total -= e.size;
        counters().disk_evictions++;
      }
    }
  }
  approx_total_ = static_cast<int64_t>(total);
  writes_since_scan_ = 0;
}

void DiskCache::discard(const std::string& key, const std::string& reason) {
  const std::shared_ptr<const Dir> dir = open_directory(/*create=*/false, nullptr);
  if (!dir) return;
  const std::string name = entry_name(key);
  ::unlinkat(dir->fd, name.c_str(), 0);
  counters().disk_errors++;
  cache_warning("discarded compile cache entry " + dir->path + "/" + name + " (" + reason +
                "); it will be recompiled");
}

size_t DiskCache::clear() {
  const std::shared_ptr<const Dir> dir = open_directory(/*create=*/false, nullptr);
  if (!dir) return 0;
  std::vector<FileInfo> temps;
  std::vector<FileInfo> entries = list_dir(dir->fd, &temps);
  size_t removed = 0;
  for (const auto* list : {&entries, &temps})
    for (const FileInfo& f : *list)
      if (::unlinkat(dir->fd, f.name.c_str(), 0) == 0) ++removed;
  std::lock_guard<std::mutex> lock(mutex_);
  approx_total_ = -1;
  return removed;
}

DiskCacheInfo DiskCache::info() {
  const std::shared_ptr<const Dir> dir = open_directory(/*create=*/false, nullptr);
  DiskCacheInfo info;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    info.directory = directory_;
    info.max_bytes = max_bytes_;
    info.refused = refused_;
  }
  info.enabled = !info.directory.empty() && info.refused.empty();
  if (!dir) return info;
  for (const FileInfo& e : list_dir(dir->fd, nullptr)) {
    info.total_bytes += e.size;
    ++info.entries;
  }
  return info;
}

DiskCache& disk_cache() {
  static DiskCache cache = DiskCache::from_environment();
  return cache;
}

}  // namespace tpu::exec
