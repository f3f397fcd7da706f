#include "runtime/compile_options.h"

namespace tpu::runtime {

namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_varint_field(std::string& out, int field, uint64_t v) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | 0);  // wire type 0: varint
  put_varint(out, v);
}

void put_bytes_field(std::string& out, int field, const std::string& bytes) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | 2);  // wire type 2: length-delimited
  put_varint(out, bytes.size());
  out += bytes;
}

}  // namespace

std::string encode_compile_options(int num_replicas, int num_partitions, bool portable,
                                   const std::vector<int64_t>& replica_devices) {
  std::string build;  // ExecutableBuildOptionsProto
  put_varint_field(build, 4, num_replicas);
  put_varint_field(build, 5, num_partitions);
  if (!replica_devices.empty()) {
    // DeviceAssignmentProto { replica_count = 1, computation_count = 2, computation_devices = 3 },
    // one ComputationDevice per partition listing its device per replica (replica_device_ids = 1).
    std::string computation;
    for (int64_t id : replica_devices) put_varint_field(computation, 1, static_cast<uint64_t>(id));
    std::string assignment;
    put_varint_field(assignment, 1, replica_devices.size());
    put_varint_field(assignment, 2, 1);
    put_bytes_field(assignment, 3, computation);
    put_bytes_field(build, 9, assignment);
  }
  std::string options;  // CompileOptionsProto
  put_bytes_field(options, 3, build);
  if (portable) put_varint_field(options, 4, 1);
  return options;
}

}  // namespace tpu::runtime
