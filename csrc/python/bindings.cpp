// torch_tpu._C: the Python face of the runtime, modes, metrics and caches.
#include <unordered_map>

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/Generator.h>
#include <torch/extension.h>

#include "aten/generator.h"
#include "aten/graph_replay.h"
#include "aten/imported_call.h"
#include "aten/out_of_memory.h"
#include "aten/register.h"
#include "aten/tpu_tensor.h"
#include "exec/compile_cache.h"
#include "exec/compiled_op_store.h"
#include "exec/device_context.h"
#include "exec/disk_cache.h"
#include "exec/executor.h"
#include "exec/fused_graph.h"
#include "exec/metrics.h"
#include "exec/recompile_log.h"
#include "exec/source_location.h"
#include "exec/timeline.h"
#include "lowering/core/registry.h"
#include "python/aten_graph.h"
#include "python/collective_bindings.h"
#include "python/distributed_bindings.h"
#include "python/dynamism_bindings.h"
#include "python/kineto_profiler.h"
#include "python/stream_bindings.h"

namespace py = pybind11;
using namespace tpu;

namespace {

// Maps a line of FX-generated code ("<eval_with_key>.N ...", a compiled graph) to the user's
// line that produced its node (set by torch_tpu.dynamo); returns None when it cannot.
py::object* g_generated_code_resolver = nullptr;

// What the location hook needs to know about a code object, computed once per code object:
// fused mode calls the hook for every recorded op, and decoding and searching file names was
// about 15% of recording time. The cache holds a reference to each code object so that its
// address is never reused by another one.
struct CodeInfo {
  std::string file;
  bool internal = false;   // torch, torch_tpu or frozen importlib code
  bool generated = false;  // FX-generated code of a compiled graph
  // The location at each instruction seen (by offset): computing a line number walks the code's
  // line table, which for a long function (a model's forward) cost half of recording an op in
  // fused mode; an instruction's location never changes. Never erased, so recorded ops keep
  // pointers to these strings (exec::current_source_location).
  std::unordered_map<int, std::string> locations;
};

// Directories of torch's and torch_tpu's Python packages (set by torch_tpu/__init__.py): a file
// under them is library code. Prefixes, not substrings: a checkout named torch_tpu holds user code.
std::vector<std::string> g_internal_dirs;

CodeInfo& code_info(PyCodeObject* code) {
  static std::unordered_map<PyCodeObject*, CodeInfo> cache;
  auto it = cache.find(code);
  if (it != cache.end()) return it->second;
  CodeInfo info;
  info.file = py::cast<std::string>(py::handle(code->co_filename));
  info.generated = info.file.rfind("<eval_with_key>", 0) == 0;
  info.internal = info.file.rfind("<frozen", 0) == 0;
  for (const std::string& dir : g_internal_dirs)
    info.internal = info.internal || info.file.rfind(dir, 0) == 0;
  Py_INCREF(code);
  return cache.emplace(code, std::move(info)).first->second;
}

// The location named by a frame of user (or FX-generated) code at its current instruction.
const std::string& frame_location(PyFrameObject* frame, CodeInfo& info) {
  auto [it, fresh] = info.locations.try_emplace(PyFrame_GetLasti(frame));
  if (!fresh) return it->second;
  const int line = PyFrame_GetLineNumber(frame);
  if (info.generated && g_generated_code_resolver != nullptr) {
    py::object user = (*g_generated_code_resolver)(info.file, line);
    if (!user.is_none()) return it->second = py::cast<std::string>(user);
  }
  return it->second = info.file + ":" + std::to_string(line);
}

// The user's line that recorded an op: the compiled-graph node running in an _AtenGraph, else the
// innermost Python frame outside torch and torch_tpu.
const std::string& user_source_location() {
  static const std::string none;
  if (const std::string* node = python::running_node_location()) return *node;
  if (!Py_IsInitialized()) return none;
  py::gil_scoped_acquire gil;
  PyFrameObject* frame = PyEval_GetFrame();
  if (frame == nullptr) return none;
  Py_INCREF(frame);
  const std::string* result = &none;
  for (int depth = 0; frame != nullptr && depth < 32; ++depth) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    CodeInfo& info = code_info(code);  // holds a reference to the code object
    Py_DECREF(code);
    if (info.generated || !info.internal) {
      result = &frame_location(frame, info);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  return *result;
}

// A local type: pybind11's class_ of a type with default visibility warns.
struct ReplayableGraph : aten::ReplayableGraph {};

}  // namespace

PYBIND11_MODULE(_C, m) {
  python::init_distributed_bindings(m);
  python::init_stream_bindings(m);
  python::init_dynamism_bindings(m);
  exec::set_source_location_hook(&user_source_location);
  python::register_kineto_profiler();
  python::init_collective_bindings(m);
  python::init_aten_graph_bindings(m);
  m.def("_configure_runtime", &exec::configure_runtime, py::arg("plugin_path"), py::arg("options"),
        py::arg("host_memory"), py::arg("error"));
  m.def("_register", [] {
    aten::register_hooks();
    return aten::register_lowered_ops();
  });
  m.def("_is_initialized", &exec::runtime_initialized);
  m.def("_device_count", [] { return static_cast<int>(exec::client().device_count()); });
  m.def("_runtime_info", [] {
    runtime::Client& c = exec::client();
    py::dict d;
    d["plugin_path"] = c.plugin().path();
    d["platform_name"] = c.platform_name();
    d["platform_version"] = c.platform_version();
    d["pjrt_api_version"] =
        std::to_string(c.plugin().api_major()) + "." + std::to_string(c.plugin().api_minor());
    d["device_kind"] = c.device_count() ? c.device_kind(0) : std::string();
    d["attributes"] = c.plugin().attributes();
    return d;
  });
  // HANDLE_TH_ERRORS: c10 errors (out of memory, failed device-side checks) reach Python as the
  // exception classes torch gives them (torch.OutOfMemoryError, IndexError, LinAlgError).
  m.def("_synchronize", [] {
    HANDLE_TH_ERRORS
    try {
      py::gil_scoped_release release;
      aten::translating_out_of_memory([] { exec::synchronize(); });
    } catch (const exec::CheckFailure& e) {
      aten::raise_check_failure(e);
    }
    END_HANDLE_TH_ERRORS_PYBIND
  });
  m.def("_set_mode", [](const std::string& mode) {
    exec::Mode m;
    if (mode == "strict")
      m = exec::Mode::Strict;
    else if (mode == "debug")
      m = exec::Mode::Debug;
    else if (mode == "fused")
      m = exec::Mode::Fused;
    else
      throw std::invalid_argument("unknown eager mode '" + mode +
                                  "' (expected 'strict', 'debug' or 'fused')");
    // Whatever was recorded runs before the mode changes, so errors and timing stay attributable.
    // Setting the mode in force changes nothing: a torch.compile graph recorded inline (in
    // eager_mode("fused")) joins the fused graph around it.
    if (m == exec::mode()) return;
    exec::flush();
    exec::set_mode(m);
  });
  m.def("_get_mode", [] {
    switch (exec::mode()) {
      case exec::Mode::Debug:
        return "debug";
      case exec::Mode::Fused:
        return "fused";
      default:
        return "strict";
    }
  });
  m.def("_flush", [] {
    HANDLE_TH_ERRORS
    aten::translating_out_of_memory([] { exec::flush(); });
    END_HANDLE_TH_ERRORS_PYBIND
  });
  m.def("_set_generated_code_resolver", [](py::object fn) {
    delete g_generated_code_resolver;
    g_generated_code_resolver = fn.is_none() ? nullptr : new py::object(std::move(fn));
  });
  py::class_<ReplayableGraph>(m, "_ReplayableGraph")
      .def(py::init<>())
      .def("begin", &ReplayableGraph::begin)
      .def("end", &ReplayableGraph::end)
      .def("replay", &ReplayableGraph::replay);
  m.def("_set_internal_source_dirs", [](const std::vector<std::string>& dirs) { g_internal_dirs = dirs; });
  m.def("_set_log_recompiles", &exec::set_recompile_logging);
  m.def("_log_recompiles", &exec::recompile_logging);
  m.def("_graph_size", [] { return exec::graph_size(); });
  m.def("_set_max_graph_nodes", &exec::set_max_graph_nodes);
  m.def("_set_repeat_cuts", &exec::set_repeat_cuts);
  m.attr("_RAN_PADDED") = exec::kRanPaddedReason;
  m.def("_set_cpu_fallback", &aten::set_cpu_fallback);
  m.def("_cpu_fallback_enabled", &aten::cpu_fallback_enabled);
  m.def("_metrics", &exec::metrics_snapshot);
  m.def("_fallback_counts", &exec::fallback_counts);
  m.def("_program_times", [] {
    std::map<std::string, std::tuple<int64_t, double, double>> out;
    for (const auto& [name, t] : exec::program_times())
      out[name] = {t.executions, t.launch_seconds, t.device_seconds};
    return out;
  });
  m.def("_reset_metrics", [] {
    exec::reset_metrics();
    exec::reset_program_times();
  });
  m.def("_cache_info", [] {
    py::dict d;
    d["size"] = exec::op_cache().size();
    d["capacity"] = exec::op_cache().capacity();
    py::list entries;
    for (const auto& e : exec::op_cache().entries()) {
      py::dict x;
      x["op"] = e.op_name;
      x["compile_seconds"] = e.compile_seconds;
      x["uses"] = e.uses;
      x["key_bytes"] = e.key_bytes;
      entries.append(x);
    }
    d["entries"] = entries;
    return d;
  });
  m.def("_cache_clear", [] { exec::op_cache().clear(); });
  m.def("_cache_set_capacity", [](size_t n) { exec::op_cache().set_capacity(n); });
  m.def("_disk_cache_info", [] {
    exec::DiskCacheInfo i = exec::disk_cache().info();
    py::dict d;
    d["enabled"] = i.enabled;
    d["directory"] = i.directory;
    d["refused"] = i.refused;
    d["max_bytes"] = i.max_bytes;
    d["total_bytes"] = i.total_bytes;
    d["entries"] = i.entries;
    return d;
  });
  m.def("_disk_cache_set_directory", [](const std::string& dir) { exec::disk_cache().set_directory(dir); });
  m.def("_disk_cache_default_directory", &exec::default_cache_directory);
  m.def("_disk_cache_set_max_bytes", [](uint64_t n) { exec::disk_cache().set_max_bytes(n); });
  m.def("_disk_cache_clear", [] { return exec::disk_cache().clear(); });
  m.def("_disk_cache_set_identity_extra", &exec::set_cache_identity_extra);
  // Cache warnings (damaged entries, unwritable directory) become Python RuntimeWarnings.
  m.def("_disk_cache_route_warnings_to_python", [] {
    exec::set_cache_warning_handler([](const std::string& message) {
      const std::string text = "torch_tpu: " + message;
      if (!Py_IsInitialized()) {
        std::fprintf(stderr, "%s\n", text.c_str());
        return;
      }
      py::gil_scoped_acquire gil;
      PyObject *type, *value, *trace;
      PyErr_Fetch(&type, &value, &trace);  // keep any error being raised
      if (PyErr_WarnEx(PyExc_RuntimeWarning, text.c_str(), 1) != 0) {
        PyErr_Clear();  // warnings turned into errors: the op must still complete
        std::fprintf(stderr, "%s\n", text.c_str());
      }
      PyErr_Restore(type, value, trace);
    });
  });
  m.def("_memory_stats", [] {
    runtime::MemoryStats s = runtime::memory_stats();
    py::dict d;
    d["allocated_bytes"] = s.allocated_bytes;
    d["peak_bytes"] = s.peak_bytes;
    d["num_allocs"] = s.num_allocs;
    d["num_frees"] = s.num_frees;
    d["num_ooms"] = aten::out_of_memory_count();
    return d;
  });
  m.def("_reset_peak_memory", &runtime::reset_peak_memory);
  m.def("_default_generator", [](int device) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(aten::default_generator(static_cast<c10::DeviceIndex>(device))));
  });
  m.def("_lowering_names", [] {
    std::vector<std::string> names;
    for (const auto* l : lowering::all_lowerings()) names.push_back(l->name);
    return names;
  });
  m.def("_registration_problems", &aten::registration_problems);
  // An imported StableHLO module's @main on tpu tensors; the results are shaped like the
  // `results` templates (meta tensors), as JAX's abstract evaluation gave them.
  m.def(
      "_run_imported",
      [](const std::string& module, const std::vector<at::Tensor>& inputs,
         const std::vector<at::Tensor>& results, const std::vector<at::Tensor>& written) {
        std::vector<ir::Type> types;
        for (const at::Tensor& r : results)
          types.push_back(ir::Type{aten::to_ir(r.scalar_type()), r.sizes().vec()});
        return aten::run_imported(module, inputs, types, written);
      },
      py::arg("module"), py::arg("inputs"), py::arg("results"),
      py::arg("written") = std::vector<at::Tensor>{});
  // The registration check on a scratch registry of (name, reads, statics) lowerings.
  m.def(
      "_check_scratch_registry",
      [](const std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>>&
             entries,
         bool strict) {
        lowering::Registry scratch;
        for (const auto& [name, reads, statics] : entries)
          scratch.add(lowering::Lowering{name, nullptr, 0, false, lowering::reads(reads, statics), {}});
        return aten::bind_schemas(scratch, strict);
      },
      py::arg("entries"), py::arg("strict") = false);
  m.def("_current_device", [] { return static_cast<int>(aten::current_device()); });
  m.def("_set_device", [](int d) {
    TORCH_CHECK(d >= 0 && d < aten::device_count(), "Invalid device, tpu:", d);
    aten::set_current_device(static_cast<c10::DeviceIndex>(d));
  });
}
