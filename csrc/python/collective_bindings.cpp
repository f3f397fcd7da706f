// torch_tpu._C._in_program_collective: in-program collectives over tpu tensors, one per device
// (exec/in_program_collective.h). torch_tpu/distributed/in_program.py is the Python face.
#include <torch/csrc/Exceptions.h>
#include <torch/extension.h>

#include "python/collective_bindings.h"

#include "aten/out_of_memory.h"
#include "aten/tpu_tensor.h"
#include "exec/fused_graph.h"
#include "exec/in_program_collective.h"

namespace py = pybind11;
using namespace tpu;

namespace {

// A tensor whose storage holds exactly its elements, densely, in its dtype: the tensor itself
// when it already does, else a contiguous copy (a view, another layout, a storage typed by
// another dtype or never written).
at::Tensor exact_storage(const at::Tensor& t) {
  exec::Storage* s = aten::storage_of(t);
  s->resolve();
  const bool exact = t.is_contiguous() && t.storage_offset() == 0 && s->defined && !s->pending &&
                     !s->padded && s->dtype == aten::to_ir(t.scalar_type()) &&
                     s->nbytes == static_cast<int64_t>(t.numel() * t.element_size());
  return exact ? t : t.clone(at::MemoryFormat::Contiguous);
}

std::vector<at::Tensor> in_program_collective(const std::string& name, const std::vector<at::Tensor>& inputs,
                                              int reduce_op, double premul,
                                              const std::vector<std::vector<int64_t>>& groups,
                                              const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  TORCH_CHECK(!inputs.empty(), "in-program ", name, ": expected one tensor per device, got none");
  const at::Tensor& first = inputs[0];
  exec::CollectiveSpec spec;
  spec.kind = exec::parse_collective(name);
  spec.reduction = {static_cast<lowering::collective::ReduceOp>(reduce_op), premul};
  for (size_t r = 0; r < inputs.size(); ++r) {
    const at::Tensor& t = inputs[r];
    TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "in-program ", name, ": tensor ", r,
                " is on ", t.device(), ", expected a tpu device");
    TORCH_CHECK(t.scalar_type() == first.scalar_type(), "in-program ", name, ": tensor ", r, " has dtype ",
                t.scalar_type(), " but tensor 0 has ", first.scalar_type());
    TORCH_CHECK(t.sizes() == first.sizes(), "in-program ", name, ": tensor ", r, " has shape ", t.sizes(),
                " but tensor 0 has ", first.sizes());
    spec.devices.push_back(t.device().index());
  }
  spec.dtype = aten::to_ir(first.scalar_type());
  spec.numel = first.numel();
  spec.groups = groups;
  spec.pairs = pairs;
  const int64_t out_numel = spec.output_numel();  // checks groups and divisibility first

  exec::flush();                 // pending fused values become buffers, so exact_storage sees them
  std::vector<at::Tensor> held;  // keeps copies alive through the launch
  std::vector<exec::Storage*> storages;
  for (const at::Tensor& t : inputs) {
    held.push_back(exact_storage(t));
    storages.push_back(aten::storage_of(held.back()));
  }
  std::vector<runtime::BufferPtr> outs;
  {
    py::gil_scoped_release release;
    outs = aten::translating_out_of_memory([&] {
      exec::flush();  // the copies above may still be pending in fused mode
      return exec::run_collective(spec, storages);
    });
  }
  std::vector<at::Tensor> result;
  for (size_t r = 0; r < outs.size(); ++r)
    result.push_back(aten::wrap_buffer(outs[r], {out_numel}, {1}, first.scalar_type(),
                                       static_cast<c10::DeviceIndex>(spec.devices[r])));
  return result;
}

}  // namespace

namespace tpu::python {

void init_collective_bindings(py::module& m) {
  m.def(
      "_in_program_collective",
      [](const std::string& name, const std::vector<at::Tensor>& inputs, int reduce_op, double premul,
         const std::vector<std::vector<int64_t>>& groups,
         const std::vector<std::pair<int64_t, int64_t>>& pairs) {
        // Every error, std::invalid_argument for bad arguments included, reaches Python as a
        // RuntimeError, as torch.distributed's own argument errors (c10::Error) do.
        HANDLE_TH_ERRORS
        return in_program_collective(name, inputs, reduce_op, premul, groups, pairs);
        END_HANDLE_TH_ERRORS_PYBIND
      },
      py::arg("name"), py::arg("inputs"), py::arg("reduce_op") = 0, py::arg("premul") = 1.0,
      py::arg("groups") = std::vector<std::vector<int64_t>>{},
      py::arg("pairs") = std::vector<std::pair<int64_t, int64_t>>{});
}

}  // namespace tpu::python
