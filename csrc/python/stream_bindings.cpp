// torch.tpu's current and default streams, like torch.cuda's _cuda_getCurrentStream and
// _cuda_setStream: streams travel as (stream_id, device_index, device_type) and everything goes
// through the device guard (aten/device_guard.cpp), so torch.tpu, torch.Stream and
// torch.accelerator see the same thread-local current streams.
#include "python/stream_bindings.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/Exceptions.h>

#include <tuple>

namespace tpu::python {

namespace {

using StreamData = std::tuple<int64_t, int, int>;

c10::Device tpu_device(int index) {
  return c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index));
}

StreamData unpack(const c10::Stream& s) {
  return {s.id(), static_cast<int>(s.device_index()), static_cast<int>(s.device_type())};
}

}  // namespace

void init_stream_bindings(pybind11::module& m) {
  m.def("_current_stream", [](int device) {
    return unpack(c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1).getStream(tpu_device(device)));
  });
  m.def("_default_stream", [](int device) {
    return unpack(
        c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1).getDefaultStream(tpu_device(device)));
  });
  // Like torch.cuda.set_stream, also makes the stream's device the current device.
  m.def("_set_stream", [](int64_t stream_id, int device) {
    HANDLE_TH_ERRORS
    c10::impl::VirtualGuardImpl guard(c10::DeviceType::PrivateUse1);
    guard.setDevice(tpu_device(device));
    guard.exchangeStream(c10::Stream(c10::Stream::UNSAFE, tpu_device(device), stream_id));
    END_HANDLE_TH_ERRORS_PYBIND
  });
  // Event.elapsed_time between two events given by their event_id (torch.Event's elapsed_time
  // accepts only an exact torch.Event as its argument, not a torch.tpu.Event).
  m.def("_elapsed_time", [](int64_t start_id, int64_t end_id, int device) {
    HANDLE_TH_ERRORS
    pybind11::gil_scoped_release release;
    return c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1)
        .elapsedTime(reinterpret_cast<void*>(start_id), reinterpret_cast<void*>(end_id),
                     static_cast<c10::DeviceIndex>(device));
    END_HANDLE_TH_ERRORS_PYBIND
  });
}

}  // namespace tpu::python
