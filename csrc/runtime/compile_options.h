// Hand-encoded xla.CompileOptionsProto bytes (no protobuf dependency). An empty options
// string parses as zero replicas and aborts the CPU plugin, so every compile passes these.
#pragma once
#include <string>

namespace tpu::runtime {

// executable_build_options { num_replicas, num_partitions }, optionally portable
// (device chosen at execute time).
std::string encode_compile_options(int num_replicas, int num_partitions, bool portable);

}  // namespace tpu::runtime
