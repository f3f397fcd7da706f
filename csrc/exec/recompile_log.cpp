#include "exec/recompile_log.h"

#include "exec/bucket_policy.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>

namespace tpu::exec {

namespace {

std::atomic<int> g_logging{-1};  // -1: not yet read from the environment
std::mutex g_mutex;
std::map<std::string, std::vector<std::string>> g_last;  // structure -> last description

std::string ints(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "]";
  return s.str();
}

std::string view_text(const OpCall& c, int v) {
  const TensorView& t = c.views[v];
  return std::string(ir::mlir_name(t.dtype)) + ints(t.geometry.sizes) + " strides " +
         ints(t.geometry.strides) + " offset " + std::to_string(t.geometry.offset);
}

// A string argument as one short line: an imported module's text (thousands of characters) by
// its first line, its length and a fingerprint, so two versions still read as different.
std::string string_text(const std::string& s) {
  const size_t line = s.find('\n');
  if (line == std::string::npos && s.size() <= 80) return "'" + s + "'";
  std::ostringstream out;
  out << "'" << s.substr(0, std::min<size_t>({line, s.size(), 80})) << " ...' (" << s.size()
      << " characters, fingerprint " << std::hex << std::hash<std::string>{}(s) << ")";
  return out.str();
}

// One line per input or parameter, named so that a difference reads as an explanation.
void describe(const OpCall& c, const std::string& prefix, std::vector<std::string>& out) {
  for (size_t i = 0; i < c.args.size(); ++i) {
    const ArgSpec& a = c.args[i];
    std::string name = prefix + "argument " + std::to_string(i);
    switch (a.kind) {
      case lowering::Arg::Kind::Tensor:
        out.push_back(name + " (tensor): " +
                      (a.view >= 0 ? view_text(c, a.view)
                                   : std::string("cpu scalar ") + ir::mlir_name(c.scalars[a.scalar].dtype)));
        break;
      case lowering::Arg::Kind::TensorList: {
        std::string s = name + " (tensor list of " + std::to_string(a.list_views.size()) + "):";
        for (int v : a.list_views) s += " " + (v >= 0 ? view_text(c, v) : std::string("None"));
        out.push_back(s);
        break;
      }
      case lowering::Arg::Kind::Scalar:
        out.push_back(name + " (scalar): " + ir::mlir_name(c.scalars[a.scalar].dtype) +
                      (a.is_static ? " value " + std::to_string(a.d) : std::string(" (runtime value)")));
        break;
      case lowering::Arg::Kind::Int:
      case lowering::Arg::Kind::Bool:
      case lowering::Arg::Kind::ScalarType:
        out.push_back(name + " = " + std::to_string(a.i));
        break;
      case lowering::Arg::Kind::IntList:
        out.push_back(name + " = " + ints(a.ints));
        break;
      case lowering::Arg::Kind::String:
        out.push_back(name + " = " + string_text(a.s));
        break;
      default:
        out.push_back(name + " = None");
    }
  }
  for (size_t k = 0; k < c.written_views.size(); ++k)
    out.push_back(prefix + "written tensor " + std::to_string(k) + ": " + view_text(c, c.written_views[k]));
}

}  // namespace

bool recompile_logging() {
  int v = g_logging.load();
  if (v < 0) {
    const char* env = std::getenv("TORCH_TPU_LOG_RECOMPILES");
    v = env != nullptr && std::string(env) != "0" && std::string(env) != "";
    g_logging.store(v);
  }
  return v == 1;
}

void set_recompile_logging(bool on) { g_logging.store(on ? 1 : 0); }

void note_compile(const std::vector<const OpCall*>& calls) {
  if (!recompile_logging()) return;
  std::string structure;
  std::vector<std::string> desc;
  for (size_t n = 0; n < calls.size(); ++n) {
    structure += calls[n]->op_name + "/" + std::to_string(calls[n]->args.size()) + ";";
    describe(*calls[n], calls.size() > 1 ? "op " + std::to_string(n) + " (" + calls[n]->op_name + ") " : "",
             desc);
  }
  std::string what =
      calls.size() == 1 ? calls[0]->op_name : "a fused graph of " + std::to_string(calls.size()) + " ops";
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_last.find(structure);
  if (it != g_last.end()) {
    std::ostringstream msg;
    msg << "torch_tpu: recompiling " << what << " because";
    int shown = 0;
    for (size_t i = 0; i < desc.size() && i < it->second.size(); ++i) {
      if (desc[i] == it->second[i]) continue;
      if (shown++ < 4) msg << "\n  " << it->second[i] << "\n   -> " << desc[i];
    }
    if (shown == 0) msg << " of a change outside its inputs (storage sizes or aliasing)";
    if (shown > 4) msg << "\n  (" << shown - 4 << " more differences)";
    std::fprintf(stderr, "%s\n", msg.str().c_str());
  }
  g_last[structure] = std::move(desc);
}

void note_bucketed_compile(const OpCall& call, const OutputPlan& plan) {
  if (!recompile_logging() || !call.dynamic) return;
  const DynamicSpec& spec = *call.dynamic;
  auto sizes = [](const std::vector<int64_t>& real, const std::vector<int64_t>& bound,
                  const std::vector<int>& sym) {
    std::ostringstream s;
    s << "[";
    for (size_t d = 0; d < real.size(); ++d) {
      s << (d ? ", " : "") << real[d];
      if (sym[d] >= 0) s << " (bucket " << bound[d] << ")";
    }
    s << "]";
    return s.str();
  };
  std::ostringstream msg;
  msg << "torch_tpu: compiling " << call.op_name << " for buckets; dynamic sizes:";
  bool any = false;
  for (size_t v = 0; v < call.views.size(); ++v) {
    const std::vector<int>& sym = spec.views[v].sizes;
    if (std::none_of(sym.begin(), sym.end(), [](int x) { return x >= 0; })) continue;
    std::vector<int64_t> bound = call.views[v].geometry.sizes;
    for (size_t d = 0; d < bound.size(); ++d)
      if (sym[d] >= 0) bound[d] = bucket(bound[d]);
    msg << "\n  input " << v << ": " << sizes(call.views[v].geometry.sizes, bound, sym);
    any = true;
  }
  for (size_t k = 0; k < plan.result_types.size(); ++k) {
    const std::vector<int>& sym = spec.results[k];
    if (std::none_of(sym.begin(), sym.end(), [](int x) { return x >= 0; })) continue;
    std::vector<int64_t> real = plan.result_types[k].shape;
    for (size_t d = 0; d < real.size(); ++d)
      if (sym[d] >= 0) real[d] = spec.values[sym[d]];
    msg << "\n  result " << k << ": " << sizes(real, plan.result_types[k].shape, sym);
    any = true;
  }
  if (!any) msg << " none (only positions and padded inputs vary)";
  std::fprintf(stderr, "%s\n", msg.str().c_str());
}

void note_bucketed_graph_compile(size_t nodes, size_t symbols) {
  if (!recompile_logging()) return;
  std::fprintf(
      stderr,
      "torch_tpu: compiling a fused graph of %zu ops for buckets (%zu runtime sizes, strides and offsets)\n",
      nodes, symbols);
}

void note_not_paddable(const std::string& op, const std::string& why) {
  if (!recompile_logging()) return;
  std::fprintf(stderr, "torch_tpu: %s varies in size but compiles per shape: %s\n", op.c_str(), why.c_str());
}

}  // namespace tpu::exec
