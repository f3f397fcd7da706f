// Tensor.record_stream(stream) on tpu tensors (FSDP2 and DDP call it). CUDA's caching allocator
// records the stream so a freed block is not reused before that stream's work is done. Here
// every stream of a device is its one in-order queue and PJRT keeps a buffer alive through the
// launches that use it, so there is nothing to record: only the stream is checked.
#include <ATen/core/Tensor.h>
#include <torch/library.h>

namespace tpu::aten {

namespace {

void record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(
      stream.device_type() == c10::DeviceType::PrivateUse1 && stream.device_index() == self.device().index(),
      "record_stream: the stream must be on the tensor's device ", self.device(), ", but is on ",
      stream.device());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", TORCH_FN(record_stream)); }

}  // namespace tpu::aten
