// Glue between at::Tensor and the torch-free exec layer.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

#include "exec/compile_cache.h"
#include "exec/executor.h"
#include "exec/op_call.h"
#include "exec/storage.h"

namespace tpu::aten {

ir::DType to_ir(c10::ScalarType t);
c10::ScalarType to_torch(ir::DType t);

// The device storage behind a tpu tensor.
exec::Storage* storage_of(const at::TensorBase& t);
// Whether tpu tensor `t` covers every element of its storage, seen as t's dtype: a write of it
// can replace the storage's buffer, a read of it can take the buffer as is.
bool covers_its_storage(const at::Tensor& t);
c10::Allocator* tpu_allocator();
c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex d);
c10::DeviceIndex device_count();

std::vector<int64_t> dense_strides(c10::IntArrayRef sizes);
// untyped_storage().resize_(nbytes): a new allocation keeping the first min(old, new) bytes;
// 0 frees the device buffer.
void resize_storage_bytes(const c10::Storage& storage, size_t nbytes);
// Adds `t`'s storage (deduplicated) and view to `call`; returns the view index.
int add_view(exec::OpCall& call, const at::Tensor& t);
// An uninitialised tpu tensor on `device` (its storage is written by the first op).
at::Tensor empty_tpu(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype,
                     c10::DeviceIndex device);
// A fresh tpu tensor whose storage holds `buffer` laid out with `strides` (padded as `form`, when
// given).
at::Tensor wrap_buffer(runtime::BufferPtr buffer, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                       c10::ScalarType dtype, c10::DeviceIndex device, exec::PaddedFormPtr form = nullptr);
// Fresh tpu tensors for the new outputs of `op`: launched now (strict, debug) or recorded into
// the fused graph, in which case their storages hold pending values and the graph takes `call`
// over (it is left moved from).
std::vector<at::Tensor> run_op(const exec::CompiledOpPtr& op, exec::OpCall& call, std::string key);
bool fused_mode();
// A failed runtime check as the error CPU raises for it (IndexError, LinAlgError, RuntimeError).
[[noreturn]] void raise_check_failure(const exec::CheckFailure& e);
// exec::launch, with failed runtime checks raised by raise_check_failure.
std::vector<runtime::BufferPtr> launch_checked(const exec::CompiledOp& op, const exec::OpCall& call);
// Raises failed runtime checks of earlier launches (at sync points).
void raise_failed_checks();
// A contiguous CPU copy of a tpu tensor (synchronizes).
at::Tensor to_cpu(const at::Tensor& t);
// Downloads tpu tensor `t` into `out`: a contiguous CPU tensor of t's sizes and dtype.
void download_into(const at::Tensor& t, const at::Tensor& out);
// dst <- host (a CPU tensor the caller will not write again). When dst covers its storage and
// host is its dense image, the storage's new buffer may use host's memory in place (no copy, no
// allocation; XLA:CPU does), which then lives as long as the buffer needs it; otherwise a copy_.
void adopt_host_tensor(const at::Tensor& dst, const at::Tensor& host);
// The out= convention: `out` resized to `result`'s shape (resize_output's checks and warning),
// then `result` copied into it.
at::Tensor& into(at::Tensor& out, const at::Tensor& result);
// Runs an internal lowering (e.g. "torch_tpu::view_copy") over tpu tensors as a one-op program.
std::vector<at::Tensor> run_internal(const char* lowering, const std::vector<at::Tensor>& inputs,
                                     const std::vector<at::Tensor>& written,
                                     const std::vector<ir::Type>& result_types, c10::DeviceIndex device);
// run_internal's parts, for a glue op whose arguments are not all tensors: the call of the
// internal lowering `name`, then (after the caller added its arguments) the run.
exec::OpCall internal_call(const char* name, c10::DeviceIndex device);
std::vector<at::Tensor> run_internal_call(exec::OpCall& call, const std::vector<at::Tensor>& written,
                                          const std::vector<ir::Type>& result_types);

}  // namespace tpu::aten
