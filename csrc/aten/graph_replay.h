// torch.compile graphs (torch_tpu.dynamo): the first call of a graph records it through the
// kernels like fused eager mode and captures the program; later calls whose inputs have the same
// layout replay it (exec::replay) and wrap its results as the graph's outputs, skipping the
// Python, dispatcher and recording work of every op.
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/fused_graph.h"

namespace tpu::aten {

class ReplayableGraph {
 public:
  // Before recording the graph on `inputs`.
  void begin(const std::vector<at::Tensor>& inputs);
  // After recording (on the inputs given to begin): "" when the graph was captured, otherwise
  // why it records on every call.
  std::string end(const std::vector<at::Tensor>& outputs);
  // The graph's outputs, or nullopt when nothing is captured for inputs laid out like these.
  std::optional<std::vector<at::Tensor>> replay(const std::vector<at::Tensor>& inputs);

 private:
  struct Output {
    int input = -1, live = -1;  // a view of an input storage, or of a live value
    std::vector<int64_t> sizes, strides;
    int64_t offset = 0;
    c10::ScalarType dtype;
  };
  struct Capture {
    std::string layout;  // of the inputs
    std::shared_ptr<exec::CapturedGraph> graph;
    std::vector<Output> outputs;
  };
  std::string recording_layout_;  // of the inputs given to begin
  // One per input layout seen (e.g. views at different offsets), most recent first.
  std::vector<Capture> captures_;
};

}  // namespace tpu::aten
