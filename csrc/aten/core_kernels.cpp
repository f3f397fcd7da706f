// Kernels that are not lowerings: allocation, views (metadata only), storage resize/set,
// copies across devices and reading single values.
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/conj_physical.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/logspace.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include "aten/out_of_memory.h"
#include "aten/tpu_tensor.h"
#include "exec/automatic_dynamic.h"
#include "exec/device_context.h"
#include "exec/fused_graph.h"
#include "exec/source_location.h"

namespace tpu::aten {

namespace {

c10::DeviceIndex device_index(std::optional<c10::Device> device) {
  if (device && device->has_index()) return device->index();
  return current_device();
}

// pin_memory=True asks for page-locked host memory, which a device tensor cannot be; PyTorch's
// CUDA factories raise this same error (the factories built on empty, zeros/ones/full/rand..., too).
void check_not_pinned(std::optional<bool> pin_memory) {
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned");
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout>, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  check_not_pinned(pin_memory);
  return empty_tpu(size, stride, dtype.value_or(c10::get_default_dtype_as_scalartype()),
                   device_index(device));
}

at::Tensor empty(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                 std::optional<c10::Layout> /*layout*/, std::optional<c10::Device> device,
                 std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  check_not_pinned(pin_memory);
  c10::DeviceIndex saved = current_device();
  set_current_device(device_index(device));
  at::Tensor t =
      at::detail::empty_generic(size, tpu_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                dtype.value_or(c10::get_default_dtype_as_scalartype()), memory_format);
  set_current_device(saved);
  return t;
}

// Gives a storage a new allocation of `nbytes`, keeping the first min(old, new) bytes of its
// contents (through the host: reallocating a storage is rare and never on a hot path). Size 0
// frees the device buffer, as FSDP2's `untyped_storage().resize_(0)` expects.
void reallocate_storage(const c10::Storage& storage, size_t nbytes) {
  exec::Storage* old = static_cast<exec::Storage*>(storage.data_ptr().get_context());
  c10::DeviceIndex saved = current_device();
  set_current_device(static_cast<c10::DeviceIndex>(old->device));
  c10::DataPtr fresh = tpu_allocator()->allocate(nbytes);
  set_current_device(saved);
  auto* s = static_cast<exec::Storage*>(fresh.get_context());
  runtime::BufferPtr old_buffer = nbytes > 0 ? exec::concrete_buffer(old) : nullptr;
  if (old_buffer) {
    const size_t old_bytes = static_cast<size_t>(old->nbytes);
    std::vector<uint8_t> host(std::max<size_t>(nbytes, old_bytes), 0);
    exec::download_elements(*old_buffer, old->padded.get(), ir::itemsize(old->dtype), host.data(), old_bytes);
    // Typed as before when the new size allows it; bytes otherwise (read back bit for bit).
    ir::DType dtype = nbytes % ir::itemsize(old->dtype) == 0 ? old->dtype : ir::DType::U8;
    int64_t n = static_cast<int64_t>(nbytes) / ir::itemsize(dtype);
    s->set_buffer(exec::upload(host.data(), dtype, {n}, old->device), dtype);
  }
  const_cast<c10::Storage&>(storage).set_data_ptr_noswap(std::move(fresh));
  const_cast<c10::Storage&>(storage).set_nbytes(nbytes);
}

// Tensor resizes only ever grow their storage, as on CPU.
void grow_storage(const c10::Storage& storage, size_t nbytes) {
  if (nbytes > storage.nbytes()) reallocate_storage(storage, nbytes);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (memory_format && *memory_format != c10::MemoryFormat::Preserve)
    impl->empty_tensor_restride(*memory_format);
  size_t needed =
      at::detail::computeStorageNbytes(size, self.strides(), self.element_size(), self.storage_offset());
  grow_storage(self.storage(), needed);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t offset, c10::IntArrayRef size,
                        c10::IntArrayRef stride) {
  TORCH_CHECK(source.device_type() == c10::DeviceType::PrivateUse1, "set_: expected a tpu storage but got ",
              source.device_type());
  self.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(source));
  self.unsafeGetTensorImpl()->set_sizes_and_strides(size, stride, offset);
  size_t needed = at::detail::computeStorageNbytes(size, stride, self.element_size(), offset);
  grow_storage(self.storage(), needed);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes()) / self.element_size();
  return set_storage(self, std::move(source), 0, {n}, {1});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& src) {
  return set_storage(self, src.storage(), src.storage_offset(), src.sizes(), src.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage s(c10::Storage::use_byte_size_t(), 0, tpu_allocator(), true);
  return set_storage(self, std::move(s), 0, {0}, {1});
}

// A copy of one whole storage into another of the same size, dtype and layout (AOTAutograd's
// write-back of mutated inputs, `p.copy_(q)`) shares the source's buffer instead of running a
// program: buffers are never modified in place, so sharing is invisible to both tensors.
bool share_whole_storage(const at::Tensor& dst, const at::Tensor& src) {
  if (src.scalar_type() != dst.scalar_type() || src.sizes() != dst.sizes() || src.strides() != dst.strides())
    return false;
  exec::Storage* d = storage_of(dst);
  exec::Storage* s = storage_of(src);
  s->resolve();
  const ir::DType dtype = to_ir(dst.scalar_type());
  if (!s->buffer || s->dtype != dtype || s->nbytes != d->nbytes) return false;
  const int64_t numel = d->numel_as(dtype);
  if (!lowering::covers_storage({dst.sizes().vec(), dst.strides().vec(), dst.storage_offset()}, numel) ||
      !lowering::covers_storage({src.sizes().vec(), src.strides().vec(), src.storage_offset()}, numel))
    return false;
  d->set_buffer(s->buffer, dtype, s->padded);
  d->host_copy = s->host_copy;  // the same values
  return true;
}

// The logical values of a tensor with lazy conjugate / negative bits, as a plain tensor. (The
// Conjugate and Negative dispatch keys pass copy_ through: it must apply the bits itself.)
at::Tensor resolve_bits(const at::Tensor& t) {
  if (t.device().type() != c10::DeviceType::PrivateUse1) return t.resolve_conj().resolve_neg();
  at::Tensor r = t;
  if (r.is_conj()) r = at::conj_physical(r.conj());  // r.conj() clears the bit: the storage's values
  if (r.is_neg()) r = at::neg(r._neg_view());
  return r;
}

at::Tensor& copy_(at::Tensor& dst, const at::Tensor& src, bool non_blocking);

// ComplexHalf has no XLA element type, so a tpu ComplexHalf storage holds (re, im) pairs of
// halves and copies into it go through its view_as_real view. (Copies out of it: to_cpu, or
// this function when the source is ComplexHalf.)
at::Tensor& copy_complex_half(at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  at::Tensor from = src.expand(dst.sizes());
  if (!dst.is_complex()) {  // complex -> real keeps the real part, as CPU's copy_ does
    at::Tensor re = at::view_as_real(from).select(-1, 0);
    return copy_(dst, re, non_blocking);
  }
  at::Tensor pairs = at::view_as_real(dst);
  if (from.is_complex()) {
    copy_(pairs, at::view_as_real(from), non_blocking);
    return dst;
  }
  at::Tensor re = pairs.select(-1, 0);
  copy_(re, from, non_blocking);
  pairs.select(-1, 1).zero_();
  return dst;
}

// The host tensor an upload came from, for padding the storage later if its sizes vary
// (exec/automatic_dynamic.h: pad_uploads); valid while `source` is not written. `host` may alias
// `source` through views made below autograd, which count versions of their own: the user's
// writes are seen on `source`'s counter. An upload whose sizes varied at its line, the one that
// may be padded, keeps a copy of its own: CPU kernels write some tensors without counting a
// version (batch norm's running statistics).
std::shared_ptr<const exec::HostCopy> host_copy_of(const at::Tensor& host, const at::Tensor& source) {
  auto copy = std::make_shared<exec::HostCopy>();
  copy->sizes = host.sizes().vec();
  copy->varied =
      exec::varied_upload_dims(exec::current_source_location(), to_ir(host.scalar_type()), copy->sizes);
  if (std::find(copy->varied.begin(), copy->varied.end(), true) != copy->varied.end()) {
    auto own = std::make_shared<at::Tensor>(host.clone(at::MemoryFormat::Contiguous));
    copy->data = own->const_data_ptr();
    copy->unchanged = [] { return true; };
    copy->owner = std::move(own);
    return copy;
  }
  auto owner = std::make_shared<std::pair<at::Tensor, at::Tensor>>(host, source);
  copy->data = host.const_data_ptr();
  copy->unchanged = [t = owner.get(), version = source._version()] {
    return t->second._version() == version;
  };
  copy->owner = std::move(owner);
  return copy;
}

// dst <- src, with broadcasting and dtype conversion, any pair of devices.
at::Tensor& copy_tpu(at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  if (dst.numel() == 0) return dst;
  const bool dst_tpu = dst.device().type() == c10::DeviceType::PrivateUse1;
  const bool src_tpu = src.device().type() == c10::DeviceType::PrivateUse1;
  if (src.is_conj() || src.is_neg()) return copy_(dst, resolve_bits(src), non_blocking);
  if (dst_tpu && (dst.is_conj() || dst.is_neg())) {
    // dst's storage holds the conjugated / negated values of what it reads as.
    at::Tensor storage_view = dst, values = src;
    if (dst.is_conj()) storage_view = storage_view.conj(), values = values.conj();
    if (dst.is_neg()) storage_view = storage_view._neg_view(), values = values._neg_view();
    copy_(storage_view, values, non_blocking);
    return dst;
  }
  if (dst_tpu && (dst.scalar_type() == c10::kComplexHalf || src.scalar_type() == c10::kComplexHalf))
    return copy_complex_half(dst, src, non_blocking);
  if (!dst_tpu) {  // tpu -> cpu: straight into dst when it is the dense host image of src
    if (dst.is_contiguous() && dst.scalar_type() == src.scalar_type() && dst.sizes() == src.sizes()) {
      download_into(src, dst);
    } else {
      dst.copy_(to_cpu(src));
    }
    return dst;
  }
  at::Tensor source = src;
  if (!src_tpu) {  // cpu -> tpu: upload, then a device copy if the target is a view
    at::Tensor host = src.to(dst.scalar_type()).expand(dst.sizes()).contiguous();
    exec::Storage* s = storage_of(dst);
    ir::DType dtype = to_ir(dst.scalar_type());
    auto buffer = exec::upload(host.const_data_ptr(), dtype, {host.numel()}, dst.device().index());
    if (covers_its_storage(dst)) {
      s->set_buffer(std::move(buffer), dtype);
      // Inference tensors count no versions: a later write to them could not be seen.
      s->host_copy = src.is_inference() ? nullptr : host_copy_of(host, src);
      return dst;
    }
    source = wrap_buffer(std::move(buffer), dst.sizes(), dense_strides(dst.sizes()), dst.scalar_type(),
                         dst.device().index());
  }
  TORCH_CHECK(source.device() == dst.device(), "copy_: expected both tensors on ", dst.device(), " but got ",
              source.device());
  if (share_whole_storage(dst, source)) return dst;
  run_internal("torch_tpu::view_copy", {source}, {dst},
               {ir::Type{to_ir(source.scalar_type()), dst.sizes().vec()}}, dst.device().index());
  return dst;
}

at::Tensor& copy_(at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  return translating_out_of_memory([&]() -> at::Tensor& { return copy_tpu(dst, src, non_blocking); });
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor d = dst;
  copy_(d, self, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_output(dst, self.sizes());
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  return translating_out_of_memory([&] { return to_cpu(self).item(); });
}

// out= forms of the factories: the functional op in the out tensor's dtype, then resized into
// it (their schemas differ from the functional ones, so register.cpp cannot pair them).
at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                       at::Tensor& out) {
  return into(out, at::arange(start, end, step, out.options()));
}

at::Tensor& linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, at::Tensor& out) {
  return into(out, at::linspace(start, end, steps, out.options()));
}

at::Tensor& logspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, double base,
                         at::Tensor& out) {
  return into(out, at::logspace(start, end, steps, base, out.options()));
}

// _efficientzerotensor: a zero tensor (autograd's zero gradients, e.g. sgn's). A plain zero-filled
// tensor stands in for PyTorch's ZeroTensor, which exists only to skip work.
at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                                 std::optional<c10::Layout> /*layout*/, std::optional<c10::Device> device,
                                 std::optional<bool> pin_memory) {
  check_not_pinned(pin_memory);
  at::Tensor t = empty_tpu(size, dense_strides(size), dtype.value_or(c10::get_default_dtype_as_scalartype()),
                           device_index(device));
  return t.zero_();
}

at::Tensor& eye_out(int64_t n, at::Tensor& out) { return into(out, at::eye(n, out.options())); }

at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  return into(out, at::eye(n, m, out.options()));
}

// Whether `self` may take `from`'s data in place (`param.data = t`, which nn.Module._apply uses
// for .to()/.half()). TensorImpl answers yes for two dense tensors of CPU, CUDA and a few other
// backends, never for PrivateUse1, so without this `module.to("tpu")` would replace every
// Parameter with a new object and untie tied weights. A tpu tensor is a plain TensorImpl like a
// CPU one, so dense CPU and tpu tensors are as compatible as CPU and CUDA ones are.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto plain_dense = [](const at::Tensor& t) {
    const c10::DeviceType type = t.device().type();
    return (type == c10::DeviceType::CPU || type == c10::DeviceType::PrivateUse1) &&
           t.layout() == c10::kStrided && !t.is_quantized() && !t.key_set().has(c10::DispatchKey::Python);
  };
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) ||
         (plain_dense(self) && plain_dense(from));
}

}  // namespace

void resize_storage_bytes(const c10::Storage& storage, size_t nbytes) {
  if (nbytes != storage.nbytes()) reallocate_storage(storage, nbytes);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  // Complex <-> (re, im) pairs: views with another dtype over the same storage; reading one
  // reinterprets the storage (lowering::reinterpret).
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("copy_", TORCH_FN(copy_));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
  m.impl("eye.out", TORCH_FN(eye_out));
  m.impl("_efficientzerotensor", TORCH_FN(efficient_zero_tensor));
  m.impl("eye.m_out", TORCH_FN(eye_m_out));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

}  // namespace tpu::aten
