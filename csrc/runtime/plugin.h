// A loaded PJRT plugin: the shared library, its PJRT_Api table and its attributes.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "pjrt_c_api.h"

namespace tpu::runtime {

class Plugin {
 public:
  // dlopens `path`, calls GetPjrtApi and PJRT_Plugin_Initialize. Throws std::runtime_error
  // with a message that says what went wrong and what to install.
  static std::shared_ptr<Plugin> load(const std::string& path);

  const PJRT_Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  int api_major() const { return api_->pjrt_api_version.major_version; }
  int api_minor() const { return api_->pjrt_api_version.minor_version; }
  // Plugin attributes (xla_version, stablehlo_current_version, ...) rendered as strings.
  const std::map<std::string, std::string>& attributes() const { return attributes_; }

 private:
  Plugin() = default;
  void* handle_ = nullptr;
  const PJRT_Api* api_ = nullptr;
  std::string path_;
  std::map<std::string, std::string> attributes_;
};

}  // namespace tpu::runtime
