// Device guard for PrivateUse1: the current tpu device is thread-local, like CUDA's. PJRT
// executes in order per device, so there is one (default) stream per device.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "aten/tpu_tensor.h"
#include "exec/device_context.h"

namespace tpu::aten {

namespace {
thread_local c10::DeviceIndex g_current_device = 0;
}

c10::DeviceIndex current_device() { return g_current_device; }

void set_current_device(c10::DeviceIndex d) { g_current_device = d; }

c10::DeviceIndex device_count() {
  // Starts the runtime on first use: the autograd engine sizes its per-device queues once, from
  // the first count it sees, so reporting 0 before start-up would break later tpu backwards.
  try {
    return static_cast<c10::DeviceIndex>(exec::client().device_count());
  } catch (const std::exception&) {
    return 0;  // no plugin: the error is raised where the device is actually used
  }
}

namespace {

void check_index(c10::DeviceIndex d) {
  TORCH_CHECK(d >= 0 && d < device_count(), "Invalid device, tpu:", static_cast<int>(d), " (there are ",
              static_cast<int>(device_count()), " tpu devices)");
}

struct TpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }

  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(c10::DeviceType::PrivateUse1, g_current_device);
  }
  void setDevice(c10::Device d) const override {
    check_index(d.index());
    g_current_device = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override { g_current_device = d.index(); }
  c10::Stream getStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream getDefaultStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream exchangeStream(c10::Stream s) const override { return getStream(s.device()); }
  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  // Work on one device completes in launch order, so events are trivially satisfied; a host
  // synchronize is what torch.tpu.synchronize() does.
  void record(void**, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

}  // namespace tpu::aten
