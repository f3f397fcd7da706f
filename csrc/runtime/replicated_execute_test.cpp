// Programs compiled for N replicas and launched on N devices by one Execute
// (Executable::execute_replicated), with and without an explicit device assignment.
#include <string>
#include <vector>

#include "runtime/client.h"
#include "runtime/compile_options.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::runtime::BufferPtr;
using tpu::runtime::Client;
using tpu::runtime::encode_compile_options;
using tpu::runtime::ExecutablePtr;

constexpr int kDevices = 4;

// Its own client: the shared fixture's has however many devices the plugin makes by default.
Client& four_device_client() {
  static Client c(tpu::testing::plugin(), {{"cpu_device_count", kDevices}});
  return c;
}

// Hand-written StableHLO, so this depends on the runtime layer only.
const char* kAllReduceSum = R"(
module @all_reduce_test {
  func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
)";

const char* kAllGather = R"(
module @all_gather_test {
  func.func public @main(%x: tensor<1xi32>) -> tensor<4xi32> {
    %0 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64,
        replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<1xi32>) -> tensor<4xi32>
    return %0 : tensor<4xi32>
  }
}
)";

std::vector<std::vector<BufferPtr>> upload_per_device(Client& c, const std::vector<std::vector<float>>& data,
                                                      const std::vector<size_t>& devices) {
  std::vector<std::vector<BufferPtr>> out;
  for (size_t r = 0; r < data.size(); ++r)
    out.push_back({c.buffer_from_host(data[r].data(), PJRT_Buffer_Type_F32,
                                      {static_cast<int64_t>(data[r].size())}, devices[r])});
  return out;
}

std::vector<std::vector<PJRT_Buffer*>> raw(const std::vector<std::vector<BufferPtr>>& bufs) {
  std::vector<std::vector<PJRT_Buffer*>> out;
  for (const auto& list : bufs) {
    out.emplace_back();
    for (const auto& b : list) out.back().push_back(b->raw());
  }
  return out;
}

}  // namespace

TEST(ReplicatedExecute, AllReduceOverFourDevicesSumsInOneLaunch) {
  Client& c = four_device_client();
  REQUIRE_EQ(c.device_count(), size_t{kDevices});
  ExecutablePtr exe = c.compile(kAllReduceSum, encode_compile_options(kDevices, 1, false));
  REQUIRE_EQ(exe->addressable_devices().size(), size_t{kDevices});
  std::vector<std::vector<float>> data{{1, 2, 3}, {10, 20, 30}, {100, 200, 300}, {1000, 2000, 3000}};
  auto inputs = upload_per_device(c, data, {0, 1, 2, 3});
  // Twice: the second launch reuses the executable with a new launch id.
  for (int round = 0; round < 2; ++round) {
    auto outs = exe->execute_replicated(raw(inputs));
    REQUIRE_EQ(outs.size(), size_t{kDevices});
    for (size_t r = 0; r < outs.size(); ++r) {
      REQUIRE_EQ(outs[r].size(), size_t{1});
      std::vector<float> got(3);
      outs[r][0]->to_host(got.data(), sizeof(float) * 3);
      CHECK_EQ(got, (std::vector<float>{1111, 2222, 3333}));
    }
  }
}

TEST(ReplicatedExecute, DeviceAssignmentPlacesReplicaOnNamedDevice) {
  Client& c = four_device_client();
  // Replica r runs on device order[r]: all_gather concatenates in replica order, so each
  // replica's value must come from the device the assignment gave it.
  const std::vector<size_t> order{2, 0, 3, 1};
  std::vector<int64_t> ids;
  for (size_t d : order) ids.push_back(c.device_id(d));
  ExecutablePtr exe = c.compile(kAllGather, encode_compile_options(kDevices, 1, false, ids));
  auto devices = exe->addressable_devices();
  REQUIRE_EQ(devices.size(), size_t{kDevices});
  for (size_t r = 0; r < order.size(); ++r) CHECK(devices[r] == c.device(order[r]));
  std::vector<std::vector<BufferPtr>> inputs;
  for (size_t r = 0; r < order.size(); ++r) {
    int32_t v = static_cast<int32_t>(10 * order[r] + 7);  // identifies the device
    inputs.push_back({c.buffer_from_host(&v, PJRT_Buffer_Type_S32, {1}, order[r])});
  }
  auto outs = exe->execute_replicated(raw(inputs));
  REQUIRE_EQ(outs.size(), size_t{kDevices});
  for (const auto& o : outs) {
    std::vector<int32_t> got(4);
    o[0]->to_host(got.data(), sizeof(int32_t) * 4);
    CHECK_EQ(got, (std::vector<int32_t>{27, 7, 37, 17}));
  }
}

TEST(ReplicatedExecute, ArgumentListsOfDifferentLengthsAreRejected) {
  Client& c = four_device_client();
  ExecutablePtr exe = c.compile(kAllReduceSum, encode_compile_options(kDevices, 1, false));
  CHECK_THROWS_WITH(exe->execute_replicated({}), std::invalid_argument, "no argument lists");
  std::vector<float> x{1, 2, 3};
  BufferPtr b = c.buffer_from_host(x.data(), PJRT_Buffer_Type_F32, {3}, 0);
  CHECK_THROWS_WITH(exe->execute_replicated({{b->raw()}, {}, {b->raw()}, {b->raw()}}), std::invalid_argument,
                    "different lengths");
}

TEST(ReplicatedExecute, DeviceAssignmentEncoding) {
  auto bytes = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  // build options {4: 2, 5: 1, 9: {1: 2, 2: 1, 3: {1: 5, 1: 3}}}
  CHECK_EQ(bytes(encode_compile_options(2, 1, false, {5, 3})),
           (std::vector<uint8_t>{0x1a, 0x10, 0x20, 0x02, 0x28, 0x01, 0x4a, 0x0a, 0x08, 0x02, 0x10, 0x01, 0x1a,
                                 0x04, 0x08, 0x05, 0x08, 0x03}));
  // Without devices: exactly the earlier encoding.
  CHECK_EQ(encode_compile_options(2, 1, false, {}), encode_compile_options(2, 1, false));
}
