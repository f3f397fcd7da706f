// The persistent compile cache's file store: byte strings under a directory, keyed by byte
// strings, bounded in size, shared safely by concurrent processes.
//
// Each entry is one file named by the hex SHA-256 of (format version, key), `<hex>.tpuc`:
//
//   "TPUCACHE" | u32 format version | u32 0 | u64 key size | u64 payload size | key | payload
//   | SHA-256 of everything before it
//
// A write goes to a unique temp file (`.tmp-...`) in the same directory, is fsynced and renamed
// over the entry, so readers see the old file, the new one or none, never a partial file; two
// processes writing the same key both leave a complete entry. A read checks magic, version, sizes
// and checksum, and that the stored key equals the requested one (a hash collision can never
// return another key's payload). A damaged entry is removed, reported once through the warning
// handler and counted in `disk_errors`; the caller recompiles and stores it again.
//
// A hit refreshes the entry's mtime. When a write takes the directory over its byte limit the
// least recently used entries are removed (down to 90% of the limit); temp files left by killed
// writers are removed once they are an hour old.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace tpu::exec {

struct DiskCacheInfo {
  bool enabled = false;
  std::string directory;    // empty when disabled
  uint64_t max_bytes = 0;
  uint64_t total_bytes = 0;  // entries only
  size_t entries = 0;
};

class DiskCache {
 public:
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr uint64_t kDefaultMaxBytes = uint64_t(2) << 30;  // 2 GiB

  // An empty `directory` disables the cache.
  DiskCache(std::string directory, uint64_t max_bytes);
  // Configured from TORCH_TPU_CACHE_DIR, TORCH_TPU_DISK_CACHE and TORCH_TPU_CACHE_MAX_BYTES.
  static DiskCache from_environment();

  bool enabled() const;
  std::string directory() const;
  uint64_t max_bytes() const;
  // An empty directory disables the cache; the directory is created on the first write.
  void set_directory(std::string directory);
  void set_max_bytes(uint64_t max_bytes);

  // The payload stored under `key`; nullopt when disabled, absent, damaged (then removed and
  // reported) or stored under another key with the same hash.
  std::optional<std::string> load(const std::string& key);
  // Writes atomically, then evicts least recently used entries if over the limit. False (and
  // counted in disk_errors, reported once per process) when the directory is not writable.
  bool store(const std::string& key, const std::string& payload);
  // Removes the entry of `key` (its payload turned out unusable), reporting `reason`.
  void discard(const std::string& key, const std::string& reason);
  // Removes every entry and temp file; returns how many files were removed.
  size_t clear();
  DiskCacheInfo info() const;
  // The file that holds `key`'s entry (whether or not it exists).
  std::string entry_path(const std::string& key) const;

 private:
  void evict_if_needed(const std::string& dir, uint64_t written_bytes);

  mutable std::mutex mutex_;
  std::string directory_;
  uint64_t max_bytes_;
  int64_t approx_total_ = -1;  // bytes in the directory as last scanned plus our writes since
  int writes_since_scan_ = 0;
  bool warned_write_failure_ = false;
};

// The process's cache, configured from the environment on first use.
DiskCache& disk_cache();
// TORCH_TPU_CACHE_DIR when set and non-empty, else $XDG_CACHE_HOME/torch_tpu, else
// ~/.cache/torch_tpu ("" when there is no home directory).
std::string default_cache_directory();

// Warnings of the cache (damaged entries, unwritable directory). The default prints a
// "torch_tpu: warning:" line to stderr; the Python layer routes them to `warnings.warn`.
void set_cache_warning_handler(std::function<void(const std::string&)> handler);
void cache_warning(const std::string& message);

// "2G", "512M", "1048576" -> bytes; nullopt when malformed.
std::optional<uint64_t> parse_byte_size(const std::string& text);

}  // namespace tpu::exec
