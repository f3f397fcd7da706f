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

std::string encode_compile_options(int num_replicas, int num_partitions, bool portable) {
  std::string build;  // ExecutableBuildOptionsProto
  put_varint_field(build, 4, num_replicas);
  put_varint_field(build, 5, num_partitions);
  std::string options;  // CompileOptionsProto
  put_bytes_field(options, 3, build);
  if (portable) put_varint_field(options, 4, 1);
  return options;
}

}  // namespace tpu::runtime
