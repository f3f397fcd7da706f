// A PJRT client: devices, host<->device transfers, compilation.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/executable.h"
#include "runtime/plugin.h"

namespace tpu::runtime {

class Client {
 public:
  // `int_options` become PJRT_NamedValue int64 create options (e.g. cpu_device_count). Throws
  // std::runtime_error when the plugin would end the process over XLA_FLAGS (plugin_environment.h).
  Client(std::shared_ptr<Plugin> plugin, const std::map<std::string, int64_t>& int_options);
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  const Plugin& plugin() const { return *plugin_; }
  const PJRT_Api* api() const { return plugin_->api(); }
  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  // The variables that change what the plugin compiles, as they were when this client started
  // (plugin_environment.h): the plugin read them then, whatever the environment says later.
  const std::vector<std::pair<std::string, std::string>>& compile_environment() const {
    return compile_environment_;
  }
  size_t device_count() const { return devices_.size(); }
  PJRT_Device* device(size_t index) const;
  std::string device_kind(size_t index) const;
  // The plugin's global id of device `index` (what a compile-time device assignment names).
  int64_t device_id(size_t index) const;

  // Copies dense host data (major-to-minor) to `device`; the host data may be freed on return.
  BufferPtr buffer_from_host(const void* data, PJRT_Buffer_Type type, const std::vector<int64_t>& dims,
                             size_t device) const;
  // The same, but the plugin may keep using `data` in place instead of copying it (XLA:CPU does,
  // for aligned data): `owner` keeps that memory alive until the plugin says it is done with it,
  // which for an aliased buffer is when the buffer (or a program output it was donated to) dies.
  BufferPtr buffer_aliasing_host(const void* data, PJRT_Buffer_Type type, const std::vector<int64_t>& dims,
                                 size_t device, std::shared_ptr<void> owner) const;
  // Compiles StableHLO MLIR text (entry function @main) as a portable single-device program.
  ExecutablePtr compile(const std::string& mlir) const;
  // The same with explicit CompileOptionsProto bytes (compile_options.h), e.g. N replicas.
  ExecutablePtr compile(const std::string& mlir, const std::string& compile_options) const;
  ExecutablePtr deserialize(const std::string& bytes) const;

 private:
  PJRT_DeviceDescription* description(size_t index) const;
  // PJRT_Client_BufferFromHostBuffer with `semantics`; `done` receives its done-with-host event.
  BufferPtr transfer_from_host(const void* data, PJRT_Buffer_Type type, const std::vector<int64_t>& dims,
                               size_t device_index, PJRT_HostBufferSemantics semantics, Event& done) const;

  std::shared_ptr<Plugin> plugin_;
  PJRT_Client* client_ = nullptr;
  std::vector<PJRT_Device*> devices_;
  std::string platform_name_, platform_version_, compile_options_;
  std::vector<std::pair<std::string, std::string>> compile_environment_;
};

}  // namespace tpu::runtime
