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
//
// Trust (cache_trust.h): entries are programs this process runs, so the directory is created
// 0700 (with any parents it makes) and entries 0600. On first use the directory is opened and
// checked through that descriptor, and so is every entry in it: a directory or an entry owned by
// another user, writable by group or others, or of the wrong file type makes the directory
// refused (one warning naming the file and the fix, counted in `disk_errors`), and nothing is
// read from or written into it until set_directory() is called again. Every file is then reached
// relative to that descriptor, and an entry is checked again by fstat of the descriptor it is
// read from (a later change refuses the directory at that point).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace tpu::exec {

struct DiskCacheInfo {
  bool enabled = false;   // a directory is set and not refused
  std::string directory;  // empty when disabled; the refused one when refused
  std::string refused;    // why `directory` is not used (the warning); empty when it is
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

  // A directory is set and has not been refused (it is checked on first use, so this may still
  // turn false then).
  bool enabled() const;
  std::string directory() const;
  uint64_t max_bytes() const;
  // An empty directory disables the cache; the directory is created on the first write and
  // checked on first use (a refused one is checked again by a new call, even with the same path).
  void set_directory(std::string directory);
  void set_max_bytes(uint64_t max_bytes);

  // The payload stored under `key`; nullopt when disabled or refused, absent, damaged (then
  // removed and reported), not trusted (reported) or stored under another key with the same hash.
  std::optional<std::string> load(const std::string& key);
  // Writes atomically, then evicts least recently used entries if over the limit. False (and
  // counted in disk_errors, reported once per process) when the directory is not writable.
  bool store(const std::string& key, const std::string& payload);
  // Removes the entry of `key` (its payload turned out unusable), reporting `reason`.
  void discard(const std::string& key, const std::string& reason);
  // Removes every entry and temp file; returns how many files were removed (none from a refused
  // directory).
  size_t clear();
  // Checks the directory if it has not been used yet (so a refusal shows here, with its warning).
  DiskCacheInfo info();
  // The file that holds `key`'s entry (whether or not it exists).
  std::string entry_path(const std::string& key) const;

 private:
  struct Dir;  // the opened, trusted directory
  // The directory, opened and checked on first use; null when disabled or refused, or when it
  // does not exist and `create` is false. With `create`, missing directories are made and a
  // failure to make or open them is described in `*problem`.
  std::shared_ptr<const Dir> open_directory(bool create, std::string* problem);
  // Turns the cache off for the current directory until set_directory(): one warning.
  void refuse(const std::string& warning);
  // Forgets `dir` (it was removed): the next use opens and checks the path again.
  void drop_directory(const std::shared_ptr<const Dir>& dir);
  // Writes one entry through a temp file; "" or what failed (`*error`: its errno).
  std::string write_entry(const Dir& dir, const std::string& name, const std::string& data, int* error);
  void evict_if_needed(const std::shared_ptr<const Dir>& dir, uint64_t written_bytes);

  mutable std::mutex mutex_;
  std::string directory_;
  uint64_t max_bytes_;
  std::shared_ptr<const Dir> dir_;  // directory_ opened and checked; null until first use
  std::string refused_;             // why directory_ is not used; "" when it is (or unchecked)
  int64_t approx_total_ = -1;       // bytes in the directory as last scanned plus our writes since
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
