// torch_tpu._C's distributed part: the tpu_dist backend class, created by torch_tpu.distributed.
#include <torch/csrc/utils/pybind.h>

#include "python/distributed_bindings.h"

#include "distributed/tpu_dist_backend.h"

namespace py = pybind11;

namespace tpu::python {

void init_distributed_bindings(py::module& m) {
  // c10d::Backend is registered by torch (with an intrusive_ptr holder); listing it as the base
  // lets the object be passed wherever torch.distributed expects a backend.
  py::class_<tpu::distributed::TpuDistBackend, c10d::Backend,
             c10::intrusive_ptr<tpu::distributed::TpuDistBackend>>(m, "_TpuDistBackend")
      .def(py::init([](const c10::intrusive_ptr<c10d::Backend>& host, int rank, int size) {
             return c10::make_intrusive<tpu::distributed::TpuDistBackend>(host, rank, size);
           }),
           py::arg("host"), py::arg("rank"), py::arg("size"))
      .def_property_readonly("host", &tpu::distributed::TpuDistBackend::host);
}

}  // namespace tpu::python
