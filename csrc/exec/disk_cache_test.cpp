// Unit tests of the persistent compile cache's torch-free parts: SHA-256, the file store
// (round trip, integrity checks, temp files, LRU eviction, disabling, trust: modes it creates,
// directories and entries of other owners or writable by others) and the CompiledOp encoding
// (round trip through a real executable on the plugin).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "exec/compiled_op_store.h"
#include "exec/disk_cache.h"
#include "exec/metrics.h"
#include "exec/sha256.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::testing::contains;

using tpu::exec::DiskCache;

// A fresh, empty directory per call, all removed at exit.
std::string temp_dir() {
  struct Root {
    std::string path;
    Root() {
      char tmpl[] = "/tmp/torch_tpu_disk_cache_test_XXXXXX";
      const char* d = ::mkdtemp(tmpl);
      if (d == nullptr) throw std::runtime_error("mkdtemp failed");
      path = d;
    }
    ~Root() { std::filesystem::remove_all(path); }
  };
  static Root root;
  static int n = 0;
  std::string dir = root.path + "/" + std::to_string(n++);
  std::filesystem::create_directory(dir);
  return dir;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

struct stat lstat_of(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) throw std::runtime_error("lstat " + path + " failed");
  return st;
}
unsigned mode_of(const std::string& path) { return lstat_of(path).st_mode & 07777; }

// Names in `dir` with their sizes and mtimes: "nothing was written or touched" compares these.
std::vector<std::string> snapshot(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    struct stat st = lstat_of(e.path().string());
    out.push_back(e.path().filename().string() + " " + std::to_string(st.st_size) + " " +
                  std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Another user's uid for chown; the tests that need it run only as root.
constexpr uid_t kOtherUid = 65534;
bool can_chown() { return ::geteuid() == 0; }

void set_mtime(const std::string& path, time_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

// Collects cache warnings instead of printing them.
struct Warnings {
  std::vector<std::string> messages;
  Warnings() {
    tpu::exec::set_cache_warning_handler([this](const std::string& m) { messages.push_back(m); });
  }
  ~Warnings() { tpu::exec::set_cache_warning_handler(nullptr); }
};

}  // namespace

TEST(Sha256, KnownVectors) {
  using tpu::exec::sha256;
  using tpu::exec::to_hex;
  CHECK_EQ(to_hex(sha256("")),
           std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  CHECK_EQ(to_hex(sha256("abc")),
           std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  CHECK_EQ(to_hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
           std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
  // Fed in odd-sized pieces across block boundaries.
  std::string million(1000000, 'a');
  tpu::exec::Sha256 h;
  for (size_t i = 0; i < million.size(); i += 777) h.update(std::string_view(million).substr(i, 777));
  CHECK_EQ(to_hex(h.finish()),
           std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

TEST(DiskCache, ParseByteSize) {
  using tpu::exec::parse_byte_size;
  CHECK(parse_byte_size("1048576") == std::optional<uint64_t>(1048576));
  CHECK(parse_byte_size("512M") == std::optional<uint64_t>(512ull << 20));
  CHECK(parse_byte_size("2G") == std::optional<uint64_t>(2ull << 30));
  CHECK(parse_byte_size("2GiB") == std::optional<uint64_t>(2ull << 30));
  CHECK(!parse_byte_size("").has_value());
  CHECK(!parse_byte_size("lots").has_value());
  CHECK(!parse_byte_size("5X").has_value());
}

TEST(DiskCache, StoreLoadRoundTripWithBinaryKeys) {
  DiskCache cache(temp_dir(), DiskCache::kDefaultMaxBytes);
  std::string key("k\0ey\xff", 5), payload("pay\0load", 8);
  CHECK(!cache.load(key).has_value());
  const int64_t writes = tpu::exec::counters().disk_writes;
  REQUIRE(cache.store(key, payload));
  CHECK_EQ(tpu::exec::counters().disk_writes - writes, 1);
  auto got = cache.load(key);
  REQUIRE(got.has_value());
  CHECK_EQ(*got, payload);
  CHECK(!cache.load(std::string("k\0ez\xff", 5)).has_value());
  // Overwriting a key replaces its payload.
  REQUIRE(cache.store(key, "second"));
  CHECK_EQ(cache.load(key).value_or(""), std::string("second"));
  CHECK_EQ(cache.info().entries, size_t(1));
}

TEST(DiskCache, StoredKeyMustMatchNotJustTheFileName) {
  // A file holding another key at this key's name (what a hash collision would look like) is
  // never returned.
  DiskCache cache(temp_dir(), DiskCache::kDefaultMaxBytes);
  REQUIRE(cache.store("key A", "payload A"));
  ::rename(cache.entry_path("key A").c_str(), cache.entry_path("key B").c_str());
  Warnings w;
  CHECK(!cache.load("key B").has_value());
  CHECK(w.messages.empty());
}

TEST(DiskCache, DamagedEntriesAreDiscardedWithAWarning) {
  DiskCache cache(temp_dir(), DiskCache::kDefaultMaxBytes);
  const std::string payload(10000, 'p');
  struct Damage {
    const char* what;
    std::function<std::string(std::string)> apply;
  };
  std::vector<Damage> damages = {
      {"flipped byte",
       [](std::string s) {
         s[s.size() / 2] ^= 0x40;
         return s;
       }},
      {"truncated", [](std::string s) { return s.substr(0, s.size() - 100); }},
      {"short", [](std::string s) { return s.substr(0, 10); }},
      {"empty", [](std::string) { return std::string(); }},
      {"bad magic",
       [](std::string s) {
         s[0] = 'X';
         return s;
       }},
      {"extended", [](std::string s) { return s + "junk"; }},
  };
  for (const Damage& d : damages) {
    REQUIRE(cache.store("key", payload));
    const std::string path = cache.entry_path("key");
    write_file(path, d.apply(read_file(path)));
    Warnings w;
    const int64_t errors = tpu::exec::counters().disk_errors;
    CHECK(!cache.load("key").has_value());
    CHECK_EQ(w.messages.size(), size_t(1));
    if (!w.messages.empty()) CHECK(w.messages[0].find(path) != std::string::npos);
    CHECK_EQ(tpu::exec::counters().disk_errors - errors, 1);
    CHECK(!exists(path));  // removed: the next store rewrites it
    std::printf("  %s: %s\n", d.what, w.messages.empty() ? "" : w.messages[0].c_str());
  }
  REQUIRE(cache.store("key", payload));
  CHECK_EQ(cache.load("key").value_or(""), payload);
}

TEST(DiskCache, TempFilesAreNeverReadAndClearRemovesThem) {
  const std::string dir = temp_dir();
  DiskCache cache(dir, DiskCache::kDefaultMaxBytes);
  REQUIRE(cache.store("key", "payload"));
  const std::string path = cache.entry_path("key");
  // A writer killed before its rename leaves only a temp file, even a complete one.
  ::rename(path.c_str(), (dir + "/.tmp-123-0-456").c_str());
  CHECK(!cache.load("key").has_value());
  CHECK_EQ(cache.info().entries, size_t(0));
  CHECK_EQ(cache.clear(), size_t(1));
  CHECK(!exists(dir + "/.tmp-123-0-456"));
}

TEST(DiskCache, EvictsLeastRecentlyUsedWhenOverTheLimit) {
  const std::string dir = temp_dir();
  const std::string payload(1000, 'x');
  DiskCache cache(dir, 100000);
  for (int i = 0; i < 5; ++i) REQUIRE(cache.store("key" + std::to_string(i), payload));
  const uint64_t entry_bytes = cache.info().total_bytes / 5;
  // Ages: key0 oldest ... key4 newest; then a hit makes key0 the most recently used.
  const time_t now = ::time(nullptr);
  for (int i = 0; i < 5; ++i) set_mtime(cache.entry_path("key" + std::to_string(i)), now - 1000 + i * 10);
  REQUIRE(cache.load("key0").has_value());
  // Room for 5 entries: the sixth write evicts down to 90% of the limit (4 entries incl. the new).
  cache.set_max_bytes(entry_bytes * 5 + entry_bytes / 2);
  const int64_t evictions = tpu::exec::counters().disk_evictions;
  REQUIRE(cache.store("key5", payload));
  CHECK_EQ(tpu::exec::counters().disk_evictions - evictions, 2);
  CHECK(exists(cache.entry_path("key0")));  // recently used
  CHECK(!exists(cache.entry_path("key1")));
  CHECK(!exists(cache.entry_path("key2")));
  CHECK(exists(cache.entry_path("key3")));
  CHECK(exists(cache.entry_path("key4")));
  CHECK(exists(cache.entry_path("key5")));
  CHECK(cache.info().total_bytes <= cache.max_bytes());
}

TEST(DiskCache, DisabledReadsAndWritesNothing) {
  DiskCache cache("", DiskCache::kDefaultMaxBytes);
  CHECK(!cache.enabled());
  CHECK(!cache.store("key", "payload"));
  CHECK(!cache.load("key").has_value());
  CHECK_EQ(cache.clear(), size_t(0));
  const std::string dir = temp_dir();
  cache.set_directory(dir);
  CHECK(cache.enabled());
  CHECK(cache.store("key", "payload"));
  CHECK_EQ(cache.load("key").value_or(""), std::string("payload"));
}

TEST(DiskCache, UnwritableDirectoryWarnsOnceAndCountsErrors) {
  const std::string dir = temp_dir();
  write_file(dir + "/file", "not a directory");
  DiskCache cache(dir + "/file/cache", DiskCache::kDefaultMaxBytes);
  Warnings w;
  const int64_t errors = tpu::exec::counters().disk_errors;
  CHECK(!cache.store("a", "payload"));
  CHECK(!cache.store("b", "payload"));
  CHECK_EQ(tpu::exec::counters().disk_errors - errors, 2);
  CHECK_EQ(w.messages.size(), size_t(1));
}

TEST(CompiledOpStore, EncodeDecodeRoundTripRunsTheExecutable) {
  using namespace tpu;
  ir::Builder b;
  ir::Value x = b.param(ir::Type{ir::DType::F32, {4}});
  b.set_results({x, x});
  exec::CompiledOp op;
  op.executable = testing::client().compile(b.module_text());
  op.plan.result_types = {ir::Type{ir::DType::F32, {4}}};
  op.plan.new_outputs = {{{2, 2}, {2, 1}, ir::DType::F32}};
  op.plan.return_counts = {1};
  op.layout.input_storages = {0};
  op.layout.written_storages = {1};
  op.layout.written_dtypes = {ir::DType::F32};
  std::string bytes = exec::encode_compiled_op(op);
  exec::CompiledOpPtr back = exec::decode_compiled_op(bytes, testing::client());
  CHECK(back->plan.result_types == op.plan.result_types);
  CHECK_EQ(back->plan.new_outputs.size(), size_t(1));
  CHECK(back->plan.new_outputs[0].sizes == op.plan.new_outputs[0].sizes);
  CHECK(back->plan.new_outputs[0].strides == op.plan.new_outputs[0].strides);
  CHECK(back->plan.return_counts == op.plan.return_counts);
  CHECK(back->layout.input_storages == op.layout.input_storages);
  CHECK(back->layout.written_storages == op.layout.written_storages);
  auto in = testing::HostArray::of<float>(ir::DType::F32, {4}, {1, 2, 3, 4});
  auto outs = testing::download(testing::execute(*back->executable, {in}),
                                {ir::Type{ir::DType::F32, {4}}, ir::Type{ir::DType::F32, {4}}});
  CHECK(outs[1].as<float>() == std::vector<float>({1, 2, 3, 4}));
  CHECK(exec::same_plan(back->plan, op.plan));
  exec::OutputPlan other = op.plan;
  other.new_outputs[0].strides = {1, 2};
  CHECK(!exec::same_plan(other, op.plan));
  // Every truncation is rejected, never misread.
  for (size_t n : {size_t(0), size_t(3), bytes.size() / 2, bytes.size() - 1})
    CHECK_THROWS(exec::decode_compiled_op(bytes.substr(0, n), testing::client()), std::runtime_error);
}

TEST(DiskCache, CreatesItsDirectoriesForTheOwnerOnlyAndEntries0600) {
  const std::string parent = temp_dir();
  const std::string dir = parent + "/made/by/store";
  DiskCache cache(dir, DiskCache::kDefaultMaxBytes);
  CHECK(!cache.load("key").has_value());
  CHECK(!exists(parent + "/made"));  // a load creates nothing
  REQUIRE(cache.store("key", "payload"));
  CHECK_EQ(mode_of(parent + "/made"), 0700u);
  CHECK_EQ(mode_of(parent + "/made/by"), 0700u);
  CHECK_EQ(mode_of(dir), 0700u);
  CHECK_EQ(mode_of(cache.entry_path("key")), 0600u);
  CHECK_EQ(lstat_of(cache.entry_path("key")).st_uid, ::geteuid());
  // Every file in it was written through a temp file created 0600; none is left.
  CHECK_EQ(snapshot(dir).size(), size_t(1));
}

TEST(DiskCache, RefusesADirectoryWritableByGroupOrOthers) {
  for (unsigned mode : {0777u, 0770u, 0703u}) {
    const std::string dir = temp_dir();
    REQUIRE(DiskCache(dir, DiskCache::kDefaultMaxBytes).store("key", "payload"));
    REQUIRE(::chmod(dir.c_str(), mode) == 0);
    const std::vector<std::string> before = snapshot(dir);
    DiskCache cache(dir, DiskCache::kDefaultMaxBytes);
    Warnings w;
    const int64_t errors = tpu::exec::counters().disk_errors;
    CHECK(cache.enabled());  // not checked before its first use
    CHECK(!cache.load("key").has_value());
    CHECK(!cache.enabled());
    CHECK(!cache.store("other key", "payload"));
    CHECK(!cache.load("key").has_value());
    CHECK_EQ(cache.clear(), size_t(0));
    cache.discard("key", "test");
    // One warning naming the directory and the fix; one error; nothing read (the hit would have
    // refreshed the mtime), written or removed.
    REQUIRE(w.messages.size() == 1);
    CHECK(contains(w.messages[0], dir));
    CHECK(contains(w.messages[0], "writable by group or others"));
    CHECK(contains(w.messages[0], "chmod 700 " + dir));
    CHECK_EQ(tpu::exec::counters().disk_errors - errors, 1);
    CHECK(snapshot(dir) == before);
    tpu::exec::DiskCacheInfo info = cache.info();
    CHECK(!info.enabled);
    CHECK_EQ(info.directory, dir);
    CHECK_EQ(info.refused, w.messages[0]);
    CHECK_EQ(info.entries, size_t(0));
    // Fixed, and pointed at again: used.
    REQUIRE(::chmod(dir.c_str(), 0700) == 0);
    cache.set_directory(dir);
    CHECK(cache.info().refused.empty());
    CHECK_EQ(cache.load("key").value_or(""), std::string("payload"));
    CHECK_EQ(w.messages.size(), size_t(1));
  }
}

TEST(DiskCache, RefusesADirectoryOfAnotherOwner) {
  if (!can_chown()) {
    std::printf("  skipped: needs root to chown\n");
    return;
  }
  const std::string dir = temp_dir();
  REQUIRE(DiskCache(dir, DiskCache::kDefaultMaxBytes).store("key", "payload"));
  REQUIRE(::chown(dir.c_str(), kOtherUid, kOtherUid) == 0);
  const std::vector<std::string> before = snapshot(dir);
  DiskCache cache(dir, DiskCache::kDefaultMaxBytes);
  Warnings w;
  tpu::exec::DiskCacheInfo info = cache.info();  // the first use: the check shows here
  CHECK(!info.enabled);
  CHECK(!cache.load("key").has_value());
  CHECK(!cache.store("key", "mine"));
  REQUIRE(w.messages.size() == 1);
  CHECK_EQ(info.refused, w.messages[0]);
  CHECK(contains(w.messages[0], dir));
  CHECK(contains(w.messages[0], "owned by uid 65534"));
  CHECK(contains(w.messages[0], "Remove " + dir + " or choose another TORCH_TPU_CACHE_DIR"));
  CHECK(snapshot(dir) == before);
  // Another directory is used again.
  cache.set_directory(temp_dir());
  CHECK(cache.store("key", "mine"));
  CHECK_EQ(cache.load("key").value_or(""), std::string("mine"));
}

TEST(DiskCache, AnUntrustedEntryTurnsTheDirectoryOff) {
  struct Case {
    const char* what;
    const char* expect;
    std::function<void(const std::string&)> apply;
  };
  std::vector<Case> cases = {
      {"mode 0666", "writable by group or others (mode 0666)",
       [](const std::string& p) { REQUIRE(::chmod(p.c_str(), 0666) == 0); }},
      {"mode 0620", "writable by group or others (mode 0620)",
       [](const std::string& p) { REQUIRE(::chmod(p.c_str(), 0620) == 0); }},
      {"symbolic link", "is a symbolic link",
       [](const std::string& p) {
         // To a copy elsewhere that would pass every other check.
         const std::string target = temp_dir() + "/elsewhere";
         write_file(target, read_file(p));
         ::chmod(target.c_str(), 0600);
         REQUIRE(::unlink(p.c_str()) == 0);
         REQUIRE(::symlink(target.c_str(), p.c_str()) == 0);
       }},
  };
  if (can_chown())
    cases.push_back({"another owner", "owned by uid 65534",
                     [](const std::string& p) { REQUIRE(::chown(p.c_str(), kOtherUid, kOtherUid) == 0); }});
  else
    std::printf("  another owner: skipped (needs root to chown)\n");
  // `opened`: the entry changes after the cache checked its directory (caught as it is read);
  // otherwise a new cache finds it when it first scans the directory, before loading anything.
  for (const bool opened : {false, true}) {
    for (const Case& c : cases) {
      const std::string dir = temp_dir();
      DiskCache writer(dir, DiskCache::kDefaultMaxBytes);
      REQUIRE(writer.store("key", "payload"));
      REQUIRE(writer.store("other", "payload"));
      DiskCache fresh(dir, DiskCache::kDefaultMaxBytes);
      DiskCache& cache = opened ? writer : fresh;
      const std::string path = cache.entry_path("key");
      c.apply(path);
      const std::vector<std::string> before = snapshot(dir);
      Warnings w;
      const int64_t errors = tpu::exec::counters().disk_errors;
      CHECK(!cache.load(opened ? "key" : "other").has_value());
      REQUIRE(w.messages.size() == 1);
      std::printf("  %s%s: %s\n", c.what, opened ? " (after first use)" : "", w.messages[0].c_str());
      CHECK(contains(w.messages[0], "not using the compile cache directory " + dir));
      CHECK(contains(w.messages[0], path));
      CHECK(contains(w.messages[0], c.expect));
      CHECK_EQ(tpu::exec::counters().disk_errors - errors, 1);
      CHECK(!cache.enabled());
      CHECK_EQ(cache.info().refused, w.messages[0]);
      // Nothing more is read, written or removed there, and nothing more is said.
      CHECK(!cache.load("other").has_value());
      CHECK(!cache.store("new", "payload"));
      CHECK_EQ(cache.clear(), size_t(0));
      CHECK(snapshot(dir) == before);
      CHECK_EQ(w.messages.size(), size_t(1));
    }
  }
}

TEST(DiskCache, KeepsUsingTheDirectoryItCheckedWhenThePathIsSwapped) {
  // Whoever can write the parent can move the checked directory away and put an open one in its
  // place; the cache keeps reading and writing the one it opened and checked.
  const std::string dir = temp_dir();
  DiskCache cache(dir, DiskCache::kDefaultMaxBytes);
  REQUIRE(cache.store("key", "checked"));
  const std::string moved = dir + ".moved";
  REQUIRE(::rename(dir.c_str(), moved.c_str()) == 0);
  REQUIRE(::mkdir(dir.c_str(), 0777) == 0);
  REQUIRE(::chmod(dir.c_str(), 0777) == 0);
  const std::string name = cache.entry_path("key").substr(dir.size());
  write_file(dir + name, read_file(moved + name));  // a copy of the entry in the open directory
  Warnings w;
  CHECK_EQ(cache.load("key").value_or(""), std::string("checked"));
  REQUIRE(cache.store("key 2", "second"));
  CHECK(exists(moved + cache.entry_path("key 2").substr(dir.size())));
  CHECK(!exists(cache.entry_path("key 2")));
  CHECK_EQ(snapshot(dir).size(), size_t(1));
  CHECK(w.messages.empty());
  std::filesystem::remove_all(moved);
}

TEST(DiskCache, MakesARemovedDirectoryAgain) {
  const std::string dir = temp_dir() + "/cache";
  DiskCache cache(dir, DiskCache::kDefaultMaxBytes);
  REQUIRE(cache.store("a", "payload"));
  std::filesystem::remove_all(dir);
  Warnings w;
  CHECK(!cache.load("a").has_value());
  REQUIRE(cache.store("b", "payload"));
  CHECK_EQ(mode_of(dir), 0700u);
  CHECK_EQ(cache.load("b").value_or(""), std::string("payload"));
  CHECK(w.messages.empty());
}
