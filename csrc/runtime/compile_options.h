// Hand-encoded xla.CompileOptionsProto bytes (no protobuf dependency). An empty options
// string parses as zero replicas and aborts the CPU plugin, so every compile passes these.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tpu::runtime {

// executable_build_options { num_replicas, num_partitions }, optionally portable
// (device chosen at execute time). `replica_devices`, when given (one global device id per
// replica, num_partitions 1), becomes the build options' device_assignment: replica r runs on
// device replica_devices[r]. Without it the plugin assigns replica r to device r.
std::string encode_compile_options(int num_replicas, int num_partitions, bool portable,
                                   const std::vector<int64_t>& replica_devices = {});

}  // namespace tpu::runtime
