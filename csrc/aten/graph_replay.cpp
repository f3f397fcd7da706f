#include "aten/graph_replay.h"

#include <algorithm>

#include "aten/tpu_tensor.h"
#include "exec/fused_graph.h"

namespace tpu::aten {

namespace {

// The distinct storages of `inputs` in order, and the bytes that a captured program depends on:
// each input's view and storage, and which inputs share a storage. Empty when an input is not a
// defined tpu tensor (such a graph is never captured).
std::string layout(const std::vector<at::Tensor>& inputs, std::vector<exec::Storage*>& storages) {
  std::string sig = "in";
  for (const at::Tensor& t : inputs) {
    if (!t.defined() || !t.is_privateuseone()) return {};
    exec::Storage* s = storage_of(t);
    auto it = std::find(storages.begin(), storages.end(), s);
    exec::append_bytes(sig, static_cast<int32_t>(it - storages.begin()));
    if (it == storages.end()) {
      storages.push_back(s);
      // A padded storage is another parameter type of the captured program.
      exec::concrete_buffer(s);
      if (s->padded)
        for (size_t d = 0; d < s->padded->bounds.size(); ++d) {
          exec::append_bytes(sig, s->padded->bounds[d]);
          exec::append_bytes(sig, s->padded->sizes[d]);
        }
      exec::append_bytes(sig, s->nbytes);
      exec::append_bytes(sig, s->device);
      exec::append_bytes(sig, s->defined);
      exec::append_bytes(sig, s->dtype);
    }
    exec::append_bytes(sig, t.scalar_type());
    exec::append_bytes(sig, static_cast<int64_t>(t.dim()));
    for (int64_t d : t.sizes()) exec::append_bytes(sig, d);
    for (int64_t d : t.strides()) exec::append_bytes(sig, d);
    exec::append_bytes(sig, t.storage_offset());
  }
  return sig;
}

constexpr size_t kMaxCaptures = 4;

}  // namespace

void ReplayableGraph::begin(const std::vector<at::Tensor>& inputs) {
  std::vector<exec::Storage*> storages;
  recording_layout_ = layout(inputs, storages);
  exec::begin_capture(storages);
}

std::string ReplayableGraph::end(const std::vector<at::Tensor>& outputs) {
  std::vector<exec::Storage*> out_storages;
  std::string sig = std::move(recording_layout_);
  recording_layout_.clear();
  std::string why;
  for (const at::Tensor& t : outputs) {
    if (!t.defined() || !t.is_privateuseone()) {
      why = "it returns a tensor that is not on tpu";
      break;
    }
    out_storages.push_back(storage_of(t));
  }
  // Runs the recorded graph even when it cannot be captured.
  std::string capture_why;
  std::shared_ptr<exec::CapturedGraph> g =
      exec::end_capture(why.empty() ? out_storages : std::vector<exec::Storage*>{}, capture_why);
  if (!why.empty()) return why;
  if (sig.empty()) return "an input is not a tpu tensor";
  if (!g) return capture_why;
  Capture c;
  c.layout = std::move(sig);
  c.graph = std::move(g);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const at::Tensor& t = outputs[k];
    Output o;
    o.input = c.graph->output_input[k];
    o.live = c.graph->output_live[k];
    if (o.input < 0 && c.graph->live_dtype[o.live] != to_ir(t.scalar_type()))
      return "it returns a view of a value in another dtype";
    o.sizes = t.sizes().vec();
    o.strides = t.strides().vec();
    o.offset = t.storage_offset();
    o.dtype = t.scalar_type();
    c.outputs.push_back(std::move(o));
  }
  auto same = std::find_if(captures_.begin(), captures_.end(),
                           [&](const Capture& x) { return x.layout == c.layout; });
  if (same != captures_.end()) captures_.erase(same);
  if (captures_.size() >= kMaxCaptures) captures_.pop_back();
  captures_.insert(captures_.begin(), std::move(c));
  return {};
}

std::optional<std::vector<at::Tensor>> ReplayableGraph::replay(const std::vector<at::Tensor>& inputs) {
  std::vector<exec::Storage*> storages;
  std::string sig = layout(inputs, storages);
  auto c =
      std::find_if(captures_.begin(), captures_.end(), [&](const Capture& x) { return x.layout == sig; });
  if (sig.empty() || c == captures_.end()) return std::nullopt;
  const exec::CapturedGraph& graph = *c->graph;
  std::vector<runtime::BufferPtr> live = exec::replay(graph, storages);
  // One storage per live value; outputs sharing a value are views of one storage.
  std::vector<at::Tensor> bases(live.size());
  std::vector<at::Tensor> result;
  const auto device = static_cast<c10::DeviceIndex>(graph.device);
  for (const Output& o : c->outputs) {
    at::Tensor base;
    if (o.input >= 0) {
      base = inputs[std::find_if(inputs.begin(), inputs.end(),
                                 [&](const at::Tensor& t) { return storage_of(t) == storages[o.input]; }) -
                    inputs.begin()];
    } else {
      if (!bases[o.live].defined()) {
        const int64_t numel = graph.program->plan.new_outputs[o.live].sizes.at(0);
        bases[o.live] = wrap_buffer(live[o.live], {numel}, {1}, o.dtype, device);
      }
      base = bases[o.live];
    }
    result.push_back(base.as_strided(o.sizes, o.strides, o.offset));
  }
  return result;
}

}  // namespace tpu::aten
