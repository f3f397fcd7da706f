// torch_tpu._C functions behind torch_tpu.dynamism (docs/dynamic_shapes.md).
#pragma once
#include <torch/extension.h>

namespace tpu::python {
void init_dynamism_bindings(pybind11::module& m);
}
