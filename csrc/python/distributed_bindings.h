// torch_tpu._C's distributed part: the tpu_dist backend class (distributed_bindings.cpp).
#pragma once
#include <torch/extension.h>

namespace tpu::python {
void init_distributed_bindings(pybind11::module& m);
}
