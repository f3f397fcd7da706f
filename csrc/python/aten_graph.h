// torch_tpu._C._AtenGraph: a torch.compile graph of ATen ops, run as a loop of dispatcher calls.
#pragma once
#include <string>

#include <torch/extension.h>

namespace tpu::python {

void init_aten_graph_bindings(pybind11::module& m);

// The user's line behind the graph node running on this thread, or nullptr when no node runs
// (or it has none): what fused recording names for that node's op, as FX's generated code would.
const std::string* running_node_location();

}  // namespace tpu::python
