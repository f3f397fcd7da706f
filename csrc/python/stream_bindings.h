// torch_tpu._C functions behind torch.tpu's streams (torch_tpu/streams.py).
#pragma once
#include <torch/extension.h>

namespace tpu::python {
void init_stream_bindings(pybind11::module& m);
}
