// The process's PJRT client (one plugin, its addressable devices) and host<->device transfers.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/storage.h"
#include "ir/dtype.h"
#include "runtime/client.h"

namespace tpu::exec {

// Loads `plugin_path` and creates the client. Called once (from Python, which chooses the
// plugin); later calls with the same path are no-ops. `host_memory`: the plugin's device memory
// is this process's memory (XLA:CPU; see runtime/host_memory.h).
void init_runtime(const std::string& plugin_path, const std::map<std::string, int64_t>& options,
                  bool host_memory);
bool runtime_initialized();
// Records which plugin to load on first use (or the error to raise then, when none was found).
void configure_runtime(const std::string& plugin_path, const std::map<std::string, int64_t>& options,
                       bool host_memory, const std::string& error);
// The client, created on first use from the configured plugin.
runtime::Client& client();

PJRT_Buffer_Type pjrt_type(ir::DType dtype);
// Uploads dense host data; counts the transfer.
runtime::BufferPtr upload(const void* data, ir::DType dtype, const std::vector<int64_t>& dims, int device);
// upload() that may alias `data` instead of copying it; `owner` keeps it alive meanwhile.
runtime::BufferPtr upload_aliasing(const void* data, ir::DType dtype, const std::vector<int64_t>& dims,
                                   int device, std::shared_ptr<void> owner);
// Downloads a whole buffer into `dst`; counts the transfer.
void download(const runtime::Buffer& buffer, void* dst, size_t nbytes);
// Uploads the dense host elements of a padded storage (row-major over form.sizes) into a buffer of
// form.bounds (the padding holds zeros).
runtime::BufferPtr upload_padded(const void* data, ir::DType dtype, const PaddedForm& form, int device);
// The first `nbytes` of a storage's elements: a padded buffer (`form`) is downloaded whole and its
// real elements gathered on the host, in row-major order.
void download_elements(const runtime::Buffer& buffer, const PaddedForm* form, int itemsize, void* dst,
                       size_t nbytes);

// Eager execution modes. Debug waits after every op so errors surface at the op that caused them.
// Fused records ops and runs everything recorded as one program at a materialization point.
enum class Mode { Strict, Debug, Fused };
Mode mode();
void set_mode(Mode m);

}  // namespace tpu::exec
