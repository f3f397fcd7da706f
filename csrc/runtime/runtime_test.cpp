// Unit tests of the runtime layer against the real PJRT plugin (TORCH_TPU_TEST_PLUGIN).
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/buffer.h"
#include "runtime/client.h"
#include "runtime/compile_options.h"
#include "runtime/event.h"
#include "runtime/pjrt_error.h"
#include "runtime/plugin.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::runtime::BufferPtr;
using tpu::runtime::Client;
using tpu::runtime::ExecutablePtr;
using tpu::runtime::PjrtError;
using tpu::runtime::Plugin;
using tpu::testing::client;

// Hand-written StableHLO (no ir::Builder), so these tests depend on the runtime layer only.
const char* kAddModule = R"(
module @add_test {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)";

const char* kTwoOutputModule = R"(
module @two_outputs {
  func.func public @main(%a: tensor<2x3xi64>) -> (tensor<2x3xi64>, tensor<3x2xi64>) {
    %0 = stablehlo.multiply %a, %a : tensor<2x3xi64>
    %1 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xi64>) -> tensor<3x2xi64>
    return %0, %1 : tensor<2x3xi64>, tensor<3x2xi64>
  }
}
)";

// The same add, with %a donated to the result.
const char* kDonatingAddModule = R"(
module @donating_add_test {
  func.func public @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)";

template <typename T>
std::vector<T> download(const tpu::runtime::Buffer& b, size_t n) {
  std::vector<T> out(n);
  b.to_host(out.data(), n * sizeof(T));
  return out;
}

template <typename T>
std::vector<T> roundtrip(const std::vector<T>& host, PJRT_Buffer_Type type,
                         const std::vector<int64_t>& dims) {
  BufferPtr b = client().buffer_from_host(host.data(), type, dims, 0);
  CHECK_EQ(b->dims(), dims);
  CHECK_EQ(static_cast<int>(b->element_type()), static_cast<int>(type));
  b->await_ready();
  return download<T>(*b, host.size());
}

std::vector<float> run_add(const tpu::runtime::Executable& exe, const std::vector<float>& a,
                           const std::vector<float>& b) {
  Client& c = client();
  BufferPtr ba = c.buffer_from_host(a.data(), PJRT_Buffer_Type_F32, {4}, 0);
  BufferPtr bb = c.buffer_from_host(b.data(), PJRT_Buffer_Type_F32, {4}, 0);
  std::vector<BufferPtr> outs = exe.execute({ba->raw(), bb->raw()}, c.device(0));
  if (outs.size() != 1) throw std::runtime_error("add returned " + std::to_string(outs.size()) + " outputs");
  outs[0]->await_ready();
  return download<float>(*outs[0], 4);
}

}  // namespace

TEST(RuntimePlugin, BadPathThrowsWithInstallHint) {
  CHECK_THROWS_WITH(Plugin::load("/nonexistent/dir/libno_such_plugin.so"), std::runtime_error,
                    "pip install xla-cpu-pjrt");
  CHECK_THROWS_WITH(Plugin::load("/nonexistent/dir/libno_such_plugin.so"), std::runtime_error,
                    "/nonexistent/dir/libno_such_plugin.so");
}

TEST(RuntimePlugin, LibraryWithoutGetPjrtApiIsRejected) {
  // libm is loadable but exports no GetPjrtApi.
  CHECK_THROWS_WITH(Plugin::load("libm.so.6"), std::runtime_error, "GetPjrtApi");
}

TEST(RuntimePlugin, LoadsWithVersionAndAttributes) {
  auto p = tpu::testing::plugin();
  REQUIRE(p != nullptr);
  CHECK(p->api() != nullptr);
  CHECK_EQ(p->path(), tpu::testing::plugin_path());
  CHECK_EQ(p->api_major(), PJRT_API_MAJOR);
  CHECK(p->api_minor() >= 0);
  CHECK(!p->attributes().empty());
  // Every PJRT plugin of this era reports the StableHLO versions it accepts.
  CHECK(p->attributes().count("stablehlo_current_version") == 1);
  CHECK(p->attributes().count("stablehlo_minimum_version") == 1);
  for (const auto& [name, value] : p->attributes()) CHECK(!name.empty());
  // Loading the same path again gives a second, equally usable handle on the same library.
  auto again = Plugin::load(tpu::testing::plugin_path());
  CHECK(again->api() == p->api());
}

TEST(RuntimeClient, PlatformAndDevices) {
  Client& c = client();
  CHECK_EQ(c.platform_name(), std::string("cpu"));
  CHECK(!c.platform_version().empty());
  REQUIRE(c.device_count() >= 1);
  CHECK(c.device(0) != nullptr);
  CHECK(!c.device_kind(0).empty());
  CHECK_THROWS_WITH(c.device(c.device_count()), std::out_of_range, "out of range");
  CHECK_EQ(&c.plugin(), tpu::testing::plugin().get());
}

TEST(RuntimeClient, CpuDeviceCountOptionAndExecuteOnSecondDevice) {
  Client c(tpu::testing::plugin(), {{"cpu_device_count", 2}});
  REQUIRE_EQ(c.device_count(), size_t{2});
  CHECK(c.device(0) != c.device(1));
  ExecutablePtr exe = c.compile(kAddModule);
  std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40};
  BufferPtr ba = c.buffer_from_host(a.data(), PJRT_Buffer_Type_F32, {4}, 1);
  BufferPtr bb = c.buffer_from_host(b.data(), PJRT_Buffer_Type_F32, {4}, 1);
  auto outs = exe->execute({ba->raw(), bb->raw()}, c.device(1));
  REQUIRE_EQ(outs.size(), size_t{1});
  CHECK_EQ(download<float>(*outs[0], 4), (std::vector<float>{11, 22, 33, 44}));
}

TEST(RuntimeExecutable, AliasedArgumentIsDonatedUnlessListedNonDonatable) {
  Client& c = client();
  ExecutablePtr exe = c.compile(kDonatingAddModule);
  std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40};
  for (bool donate : {true, false}) {
    BufferPtr ba = c.buffer_from_host(a.data(), PJRT_Buffer_Type_F32, {4}, 0);
    BufferPtr bb = c.buffer_from_host(b.data(), PJRT_Buffer_Type_F32, {4}, 0);
    std::vector<int64_t> keep_a = donate ? std::vector<int64_t>{} : std::vector<int64_t>{0};
    tpu::runtime::Event made_a = ba->ready_event();
    auto outs = exe->execute({ba->raw(), bb->raw()}, c.device(0), keep_a);
    REQUIRE_EQ(outs.size(), size_t{1});
    CHECK_EQ(download<float>(*outs[0], 4), (std::vector<float>{11, 22, 33, 44}));
    CHECK_EQ(ba->is_deleted(), donate);
    made_a.await();  // an event taken before the donation still fires
    CHECK(!bb->is_deleted());
    if (!donate) CHECK_EQ(download<float>(*ba, 4), a);
  }
}

TEST(RuntimeBuffer, RoundtripF32) {
  std::vector<float> host{0.f, -1.5f, 3.25f, std::numeric_limits<float>::infinity(), 1e-38f, -0.f};
  std::vector<float> back = roundtrip(host, PJRT_Buffer_Type_F32, {2, 3});
  REQUIRE_EQ(back.size(), host.size());
  CHECK(std::memcmp(back.data(), host.data(), host.size() * sizeof(float)) == 0);
}

TEST(RuntimeBuffer, RoundtripI64) {
  std::vector<int64_t> host{
      std::numeric_limits<int64_t>::min(), -1, 0, 1, std::numeric_limits<int64_t>::max(), int64_t{1} << 40};
  CHECK_EQ(roundtrip(host, PJRT_Buffer_Type_S64, {3, 2}), host);
}

TEST(RuntimeBuffer, RoundtripBool) {
  // PRED buffers hold one byte per element, 0 or 1.
  std::vector<uint8_t> host{1, 0, 1, 1, 0};
  CHECK_EQ(roundtrip(host, PJRT_Buffer_Type_PRED, {5}), host);
}

TEST(RuntimeBuffer, RoundtripBF16) {
  // bit patterns: 1.0, -2.0, +inf, smallest subnormal, 65280 (0x477F), -0.0
  std::vector<uint16_t> host{0x3F80, 0xC000, 0x7F80, 0x0001, 0x477F, 0x8000};
  CHECK_EQ(roundtrip(host, PJRT_Buffer_Type_BF16, {6}), host);
}

TEST(RuntimeBuffer, RoundtripScalarAndEmpty) {
  double x = 2.718281828459045;
  CHECK_EQ(roundtrip(std::vector<double>{x}, PJRT_Buffer_Type_F64, {}), std::vector<double>{x});
  BufferPtr empty = client().buffer_from_host(nullptr, PJRT_Buffer_Type_F32, {0, 3}, 0);
  CHECK_EQ(empty->dims(), (std::vector<int64_t>{0, 3}));
  CHECK_EQ(empty->size_in_bytes(), int64_t{0});
}

TEST(RuntimeBuffer, MemoryStatsFollowLiveBuffers) {
  using tpu::runtime::memory_stats;
  auto before = memory_stats();
  std::vector<float> host(1000, 1.f);
  {
    BufferPtr a = client().buffer_from_host(host.data(), PJRT_Buffer_Type_F32, {1000}, 0);
    auto one = memory_stats();
    CHECK(a->size_in_bytes() >= 4000);
    CHECK_EQ(one.allocated_bytes, before.allocated_bytes + a->size_in_bytes());
    CHECK_EQ(one.num_allocs, before.num_allocs + 1);
    CHECK(one.peak_bytes >= one.allocated_bytes);
    {
      BufferPtr b = client().buffer_from_host(host.data(), PJRT_Buffer_Type_F32, {500}, 0);
      auto two = memory_stats();
      CHECK(b->size_in_bytes() >= 2000);
      CHECK_EQ(two.allocated_bytes, one.allocated_bytes + b->size_in_bytes());
      CHECK_EQ(two.num_allocs, before.num_allocs + 2);
    }
    auto after_b = memory_stats();
    CHECK_EQ(after_b.allocated_bytes, one.allocated_bytes);
    CHECK_EQ(after_b.num_frees, before.num_frees + 1);
  }
  auto after = memory_stats();
  CHECK_EQ(after.allocated_bytes, before.allocated_bytes);
  CHECK_EQ(after.num_frees, before.num_frees + 2);
  // Peak stays at the high-water mark until reset, then drops to what is live.
  CHECK(after.peak_bytes >= before.allocated_bytes + 6000);
  tpu::runtime::reset_peak_memory();
  CHECK_EQ(memory_stats().peak_bytes, after.allocated_bytes);
}

TEST(RuntimeEvent, EmptyEventIsReady) {
  tpu::runtime::Event e;
  CHECK(!e.valid());
  CHECK(e.is_ready());
  e.await();  // no-op
  tpu::runtime::Event moved(std::move(e));
  CHECK(!moved.valid());
}

TEST(RuntimeExecutable, CompileAndExecuteAdd) {
  ExecutablePtr exe = client().compile(kAddModule);
  REQUIRE(exe != nullptr);
  CHECK_EQ(exe->num_outputs(), size_t{1});
  std::vector<float> a{1.5f, -2.f, 0.25f, 1e6f}, b{0.5f, 2.f, 0.125f, -1.f};
  std::vector<float> expected(4);
  for (int i = 0; i < 4; ++i) expected[i] = a[i] + b[i];
  CHECK_EQ(run_add(*exe, a, b), expected);
}

TEST(RuntimeExecutable, MultipleOutputs) {
  ExecutablePtr exe = client().compile(kTwoOutputModule);
  CHECK_EQ(exe->num_outputs(), size_t{2});
  std::vector<int64_t> a{1, -2, 3, 40000000000, 5, 6};
  BufferPtr ba = client().buffer_from_host(a.data(), PJRT_Buffer_Type_S64, {2, 3}, 0);
  auto outs = exe->execute({ba->raw()}, client().device(0));
  REQUIRE_EQ(outs.size(), size_t{2});
  std::vector<int64_t> sq(6), tr(6);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      sq[i * 3 + j] = a[i * 3 + j] * a[i * 3 + j];
      tr[j * 2 + i] = a[i * 3 + j];
    }
  CHECK_EQ(outs[0]->dims(), (std::vector<int64_t>{2, 3}));
  CHECK_EQ(outs[1]->dims(), (std::vector<int64_t>{3, 2}));
  CHECK_EQ(download<int64_t>(*outs[0], 6), sq);
  CHECK_EQ(download<int64_t>(*outs[1], 6), tr);
}

TEST(RuntimeExecutable, InvalidMlirThrowsPjrtErrorAndClientStaysUsable) {
  bool thrown = false;
  try {
    client().compile("module { this is not valid mlir %%% }");
  } catch (const PjrtError& e) {
    thrown = true;
    std::string what = e.what();
    const std::string prefix = "PJRT_Client_Compile: ";
    CHECK_EQ(what.substr(0, prefix.size()), prefix);
    // The plugin's own diagnostic follows: an MLIR parse error naming the offending token.
    CHECK(what.find("error") != std::string::npos);
    CHECK(what.find("'this'") != std::string::npos);
    CHECK(e.code() != 0);
  }
  CHECK(thrown);
  // Well-formed syntax but ill-typed (shape mismatch) is rejected too.
  CHECK_THROWS(client().compile(R"(
module {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)"),
               PjrtError);
  // The process and the client survive: a later compile and run work.
  ExecutablePtr exe = client().compile(kAddModule);
  CHECK_EQ(run_add(*exe, {1, 2, 3, 4}, {1, 1, 1, 1}), (std::vector<float>{2, 3, 4, 5}));
}

TEST(RuntimeExecutable, SerializeDeserializeGivesSameResults) {
  ExecutablePtr exe = client().compile(kAddModule);
  std::string bytes = exe->serialize();
  CHECK(!bytes.empty());
  ExecutablePtr back = client().deserialize(bytes);
  REQUIRE(back != nullptr);
  CHECK_EQ(back->num_outputs(), exe->num_outputs());
  std::vector<float> a{3, 1, 4, 1}, b{5, 9, 2, 6};
  CHECK_EQ(run_add(*back, a, b), run_add(*exe, a, b));
  CHECK_EQ(run_add(*back, a, b), (std::vector<float>{8, 10, 6, 7}));
  CHECK_THROWS(client().deserialize("definitely not an executable"), PjrtError);
}

TEST(RuntimeCompileOptions, DocumentedEncoding) {
  using tpu::runtime::encode_compile_options;
  auto bytes = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  // CompileOptionsProto{ executable_build_options(3) { num_replicas(4): 1, num_partitions(5): 1 } }
  CHECK_EQ(bytes(encode_compile_options(1, 1, false)),
           (std::vector<uint8_t>{0x1a, 0x04, 0x20, 0x01, 0x28, 0x01}));
  // ... plus compile_portable_executable(4): true
  CHECK_EQ(bytes(encode_compile_options(1, 1, true)),
           (std::vector<uint8_t>{0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01}));
  // 300 needs a two-byte varint: 300 = 0b10'0101100 -> 0xac 0x02.
  CHECK_EQ(bytes(encode_compile_options(300, 2, false)),
           (std::vector<uint8_t>{0x1a, 0x05, 0x20, 0xac, 0x02, 0x28, 0x02}));
}
