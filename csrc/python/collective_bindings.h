// torch_tpu._C's in-program collectives (collective_bindings.cpp).
#pragma once
#include <torch/extension.h>

namespace tpu::python {
void init_collective_bindings(pybind11::module& m);
}
