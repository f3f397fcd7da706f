#include "runtime/client.h"

#include "runtime/compile_options.h"
#include "runtime/pjrt_error.h"
#include "runtime/plugin_environment.h"

namespace tpu::runtime {

Client::Client(std::shared_ptr<Plugin> plugin, const std::map<std::string, int64_t>& int_options)
    : plugin_(std::move(plugin)) {
  const PJRT_Api* api = plugin_->api();
  std::vector<PJRT_NamedValue> options;
  for (const auto& [name, value] : int_options) {
    TPU_PJRT_ARGS(PJRT_NamedValue, v);
    v.name = name.c_str();
    v.name_size = name.size();
    v.type = PJRT_NamedValue_kInt64;
    v.int64_value = value;
    v.value_size = 1;
    options.push_back(v);
  }
  TPU_PJRT_ARGS(PJRT_Client_Create_Args, create);
  create.create_options = options.data();
  create.num_options = options.size();
  compile_environment_ = read_compile_environment();
  check_plugin_accepts_flags(*plugin_, create);
  check(api, api->PJRT_Client_Create(&create), "PJRT_Client_Create");
  client_ = create.client;

  TPU_PJRT_ARGS(PJRT_Client_PlatformName_Args, name);
  name.client = client_;
  check(api, api->PJRT_Client_PlatformName(&name), "PJRT_Client_PlatformName");
  platform_name_.assign(name.platform_name, name.platform_name_size);
  TPU_PJRT_ARGS(PJRT_Client_PlatformVersion_Args, version);
  version.client = client_;
  check(api, api->PJRT_Client_PlatformVersion(&version), "PJRT_Client_PlatformVersion");
  platform_version_.assign(version.platform_version, version.platform_version_size);

  TPU_PJRT_ARGS(PJRT_Client_AddressableDevices_Args, devs);
  devs.client = client_;
  check(api, api->PJRT_Client_AddressableDevices(&devs), "PJRT_Client_AddressableDevices");
  devices_.assign(devs.addressable_devices, devs.addressable_devices + devs.num_addressable_devices);
  // Portable executables pick their device at execute time, so one compile serves every device.
  compile_options_ = encode_compile_options(1, 1, /*portable=*/true);
}

Client::~Client() {
  TPU_PJRT_ARGS(PJRT_Client_Destroy_Args, d);
  d.client = client_;
  api()->PJRT_Client_Destroy(&d);
}

PJRT_Device* Client::device(size_t index) const {
  if (index >= devices_.size())
    throw std::out_of_range("tpu device index " + std::to_string(index) + " out of range (" +
                            std::to_string(devices_.size()) + " devices)");
  return devices_[index];
}

PJRT_DeviceDescription* Client::description(size_t index) const {
  TPU_PJRT_ARGS(PJRT_Device_GetDescription_Args, get);
  get.device = device(index);
  check(api(), api()->PJRT_Device_GetDescription(&get), "PJRT_Device_GetDescription");
  return get.device_description;
}

std::string Client::device_kind(size_t index) const {
  TPU_PJRT_ARGS(PJRT_DeviceDescription_Kind_Args, kind);
  kind.device_description = description(index);
  check(api(), api()->PJRT_DeviceDescription_Kind(&kind), "PJRT_DeviceDescription_Kind");
  return std::string(kind.device_kind, kind.device_kind_size);
}

BufferPtr Client::transfer_from_host(const void* data, PJRT_Buffer_Type type,
                                     const std::vector<int64_t>& dims, size_t device_index,
                                     PJRT_HostBufferSemantics semantics, Event& done) const {
  TPU_PJRT_ARGS(PJRT_Client_BufferFromHostBuffer_Args, args);
  args.client = client_;
  args.data = data;
  args.type = type;
  args.dims = dims.data();
  args.num_dims = dims.size();
  args.host_buffer_semantics = semantics;
  args.device = device(device_index);
  check(api(), api()->PJRT_Client_BufferFromHostBuffer(&args), "PJRT_Client_BufferFromHostBuffer");
  done = Event(api(), args.done_with_host_buffer);
  return std::make_shared<Buffer>(api(), args.buffer);
}

BufferPtr Client::buffer_from_host(const void* data, PJRT_Buffer_Type type, const std::vector<int64_t>& dims,
                                   size_t device_index) const {
  Event done;
  BufferPtr buffer = transfer_from_host(data, type, dims, device_index,
                                        PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, done);
  done.await();  // the host data is only guaranteed to be read once this fires
  return buffer;
}

BufferPtr Client::buffer_aliasing_host(const void* data, PJRT_Buffer_Type type,
                                       const std::vector<int64_t>& dims, size_t device_index,
                                       std::shared_ptr<void> owner) const {
  Event done;
  BufferPtr buffer =
      transfer_from_host(data, type, dims, device_index, PJRT_HostBufferSemantics_kImmutableZeroCopy, done);
  done.on_ready([owner = std::move(owner)]() mutable { owner.reset(); });
  return buffer;
}

int64_t Client::device_id(size_t index) const {
  TPU_PJRT_ARGS(PJRT_DeviceDescription_Id_Args, id);
  id.device_description = description(index);
  check(api(), api()->PJRT_DeviceDescription_Id(&id), "PJRT_DeviceDescription_Id");
  return id.id;
}

ExecutablePtr Client::compile(const std::string& mlir) const { return compile(mlir, compile_options_); }

ExecutablePtr Client::compile(const std::string& mlir, const std::string& compile_options) const {
  static const char kFormat[] = "mlir";
  TPU_PJRT_ARGS(PJRT_Program, program);
  program.code = const_cast<char*>(mlir.data());
  program.code_size = mlir.size();
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;
  TPU_PJRT_ARGS(PJRT_Client_Compile_Args, args);
  args.client = client_;
  args.program = &program;
  args.compile_options = compile_options.data();
  args.compile_options_size = compile_options.size();
  check(api(), api()->PJRT_Client_Compile(&args), "PJRT_Client_Compile");
  return std::make_shared<Executable>(api(), args.executable);
}

ExecutablePtr Client::deserialize(const std::string& bytes) const {
  TPU_PJRT_ARGS(PJRT_Executable_DeserializeAndLoad_Args, args);
  args.client = client_;
  args.serialized_executable = bytes.data();
  args.serialized_executable_size = bytes.size();
  check(api(), api()->PJRT_Executable_DeserializeAndLoad(&args), "PJRT_Executable_DeserializeAndLoad");
  return std::make_shared<Executable>(api(), args.loaded_executable);
}

}  // namespace tpu::runtime
