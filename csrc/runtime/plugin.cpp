#include "runtime/plugin.h"

#include <dlfcn.h>

#include <sstream>

#include "runtime/pjrt_error.h"

namespace tpu::runtime {

namespace {

std::string render(const PJRT_NamedValue& v) {
  switch (v.type) {
    case PJRT_NamedValue_kString:
      return std::string(v.string_value, v.value_size);
    case PJRT_NamedValue_kInt64:
      return std::to_string(v.int64_value);
    case PJRT_NamedValue_kInt64List: {
      std::ostringstream out;
      for (size_t i = 0; i < v.value_size; ++i) out << (i ? "." : "") << v.int64_array_value[i];
      return out.str();
    }
    case PJRT_NamedValue_kFloat:
      return std::to_string(v.float_value);
    case PJRT_NamedValue_kBool:
      return v.bool_value ? "true" : "false";
  }
  return "";
}

}  // namespace

std::shared_ptr<Plugin> Plugin::load(const std::string& path) {
  // RTLD_LOCAL keeps the plugin's bundled LLVM/protobuf symbols away from torch's.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    throw std::runtime_error("torch_tpu: cannot load the PJRT plugin '" + path +
                             "': " + (err ? err : "unknown error") +
                             ". Install the default CPU plugin with `pip install xla-cpu-pjrt==0.0.1` "
                             "or point TORCH_TPU_PJRT_PLUGIN at a PJRT plugin .so");
  }
  using GetApiFn = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetApiFn>(dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr) {
    dlclose(handle);
    throw std::runtime_error("torch_tpu: '" + path +
                             "' is not a PJRT plugin (it exports no GetPjrtApi symbol)");
  }
  std::shared_ptr<Plugin> plugin(new Plugin());
  plugin->handle_ = handle;  // never dlclosed: plugins keep threads and atexit hooks alive
  plugin->path_ = path;
  plugin->api_ = get_api();
  if (plugin->api_ == nullptr) throw std::runtime_error("torch_tpu: GetPjrtApi returned null in " + path);
  if (plugin->api_major() != PJRT_API_MAJOR) {
    std::ostringstream out;
    out << "torch_tpu: the PJRT plugin '" << path << "' implements PJRT C API " << plugin->api_major() << "."
        << plugin->api_minor() << " but torch_tpu was built against " << PJRT_API_MAJOR << "."
        << PJRT_API_MINOR << "; major versions must match";
    throw std::runtime_error(out.str());
  }
  const PJRT_Api* api = plugin->api_;
  if (api->PJRT_Plugin_Initialize != nullptr) {
    TPU_PJRT_ARGS(PJRT_Plugin_Initialize_Args, init);
    check(api, api->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize");
  }
  if (api->PJRT_Plugin_Attributes != nullptr) {
    TPU_PJRT_ARGS(PJRT_Plugin_Attributes_Args, attrs);
    check(api, api->PJRT_Plugin_Attributes(&attrs), "PJRT_Plugin_Attributes");
    for (size_t i = 0; i < attrs.num_attributes; ++i) {
      const PJRT_NamedValue& v = attrs.attributes[i];
      plugin->attributes_[std::string(v.name, v.name_size)] = render(v);
    }
  }
  return plugin;
}

}  // namespace tpu::runtime
