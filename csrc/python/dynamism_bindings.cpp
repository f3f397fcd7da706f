#include "python/dynamism_bindings.h"

#include "aten/tpu_tensor.h"
#include "exec/automatic_dynamic.h"
#include "exec/bucket_policy.h"
#include "exec/device_context.h"
#include "exec/fused_graph.h"

namespace tpu::python {

namespace py = pybind11;

namespace {

// `t` stored padded along `dim` (bound `bound`, or its bucket when 0): the same tensor when its
// storage already is, else a padded copy (through the host, once).
at::Tensor mark_dynamic(const at::Tensor& t, int64_t dim, int64_t bound) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "mark_dynamic: expected a tpu tensor, got ",
              t.device());
  dim = c10::maybe_wrap_dim(dim, t.dim());
  TORCH_CHECK(bound == 0 || bound >= t.size(dim), "mark_dynamic: upper_bound ", bound,
              " is below the dimension's size ", t.size(dim));
  at::Tensor dense = aten::covers_its_storage(t) && t.is_contiguous() ? t : t.contiguous();
  exec::Storage* s = aten::storage_of(dense);
  exec::concrete_buffer(s);
  const int64_t want = bound > 0 ? bound : exec::bucket(t.size(dim));
  if (s->padded && s->padded->dynamic[dim] && s->padded->bounds[dim] == want) return dense;
  exec::PaddedFormPtr form = exec::marked_form(s->padded.get(), dense.sizes().vec(), dim, bound);
  at::Tensor host = aten::to_cpu(dense);
  const ir::DType dtype = aten::to_ir(dense.scalar_type());
  return aten::wrap_buffer(exec::upload_padded(host.const_data_ptr(), dtype, *form, dense.device().index()),
                           dense.sizes(), dense.strides(), dense.scalar_type(), dense.device().index(), form);
}

// (dimension, bound) of each dynamic dimension of `t`'s storage, when t is that storage's dense
// tensor; empty otherwise.
std::vector<std::pair<int64_t, int64_t>> dynamic_dims(const at::Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (t.device().type() != c10::DeviceType::PrivateUse1 || !aten::covers_its_storage(t) || !t.is_contiguous())
    return out;
  exec::Storage* s = aten::storage_of(t);
  exec::concrete_buffer(s);
  if (!s->padded || s->padded->sizes.size() != static_cast<size_t>(t.dim())) return out;
  for (size_t d = 0; d < s->padded->sizes.size(); ++d)
    if (s->padded->dynamic[d]) out.emplace_back(static_cast<int64_t>(d), s->padded->bounds[d]);
  return out;
}

}  // namespace

void init_dynamism_bindings(py::module& m) {
  m.def("_dynamic_shapes_enabled", &exec::dynamic_shapes_enabled);
  m.def("_set_dynamic_shapes_enabled", &exec::set_dynamic_shapes_enabled);
  m.def("_bucket_policy", [] {
    const exec::BucketPolicy p = exec::bucket_policy();
    return std::make_pair(p.minimum, p.granule);
  });
  m.def("_set_bucket_policy",
        [](int64_t minimum, int64_t granule) { exec::set_bucket_policy({minimum, granule}); });
  m.def("_bucket", &exec::bucket);
  m.def("_forget_varied_sizes", &exec::forget_varied_slots);
  m.def("_mark_dynamic", &mark_dynamic);
  m.def("_dynamic_dims", &dynamic_dims);
}

}  // namespace tpu::python
