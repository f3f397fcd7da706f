// Device guard for PrivateUse1: the current tpu device is thread-local, like CUDA's, and so is
// the current stream of each device. Streams and events are real objects with CUDA's API, over
// one execution queue per device: PJRT runs a device's launches in launch order, so every
// stream of a device maps to that queue, and a stream waiting on another stream or on an event
// (block, wait_stream, wait_event) is already satisfied by launch order. Events are real: an
// event records a marker of the work launched so far (exec/launch_marker.h) that can be
// queried, awaited and timed.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <atomic>
#include <memory>
#include <vector>

#include "aten/out_of_memory.h"
#include "aten/tpu_tensor.h"
#include "exec/device_context.h"
#include "exec/launch_marker.h"

namespace tpu::aten {

namespace {
thread_local c10::DeviceIndex g_current_device = 0;
// Per device index: this thread's current stream id (0, the default stream, when unset).
thread_local std::vector<c10::StreamId> g_current_streams;
// Ids of streams made by getNewStream / getStreamFromGlobalPool: all distinct, never 0. With one
// queue per device a pool would only recycle names, so every request gets a fresh id.
std::atomic<c10::StreamId> g_next_stream_id{1};
}  // namespace

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

c10::DeviceIndex index_or_current(c10::Device d) { return d.has_index() ? d.index() : g_current_device; }

c10::Stream make_stream(c10::DeviceIndex index, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index), id);
}

// What a c10 event's void* holds once recorded: the marker of its latest record().
struct TpuEvent {
  std::shared_ptr<exec::LaunchMarker> marker;
};

exec::LaunchMarker& marker_of(void* event) { return *static_cast<TpuEvent*>(event)->marker; }

// Waiting on launched work raises its execution errors as PyTorch does for the same failure
// elsewhere: out of memory as torch.OutOfMemoryError, a failed runtime check (raised by the
// fused graph a marker flushes) as the error CPU gives.
template <class F>
decltype(auto) translating_errors(F&& f) {
  try {
    return translating_out_of_memory(std::forward<F>(f));
  } catch (const exec::CheckFailure& e) {
    raise_check_failure(e);
  }
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
  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  c10::Stream getStream(c10::Device d) const override {
    const c10::DeviceIndex index = index_or_current(d);
    const auto i = static_cast<size_t>(index);
    return make_stream(index, i < g_current_streams.size() ? g_current_streams[i] : c10::StreamId(0));
  }
  c10::Stream getDefaultStream(c10::Device d) const override { return make_stream(index_or_current(d), 0); }
  c10::Stream getNewStream(c10::Device d, int /*priority: one queue, nothing to order*/) const override {
    const c10::DeviceIndex index = index_or_current(d);
    check_index(index);
    return make_stream(index, g_next_stream_id++);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*isHighPriority*/) const override {
    return getNewStream(d, 0);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::Stream old = getStream(s.device());
    const auto i = static_cast<size_t>(s.device_index());
    if (i >= g_current_streams.size()) g_current_streams.resize(i + 1, 0);
    g_current_streams[i] = s.id();
    return old;
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ",
                static_cast<int>(device_index), " does not match recording stream's device index ",
                static_cast<int>(stream.device_index()), ".");
    check_index(stream.device_index());
    // BACKEND_DEFAULT is what torch.Event(enable_timing=True) asks for (CUDA: a timing event).
    auto marker = translating_errors([&] {
      return std::make_shared<exec::LaunchMarker>(stream.device_index(),
                                                  flag == c10::EventFlag::BACKEND_DEFAULT);
    });
    if (*event == nullptr) *event = new TpuEvent;
    static_cast<TpuEvent*>(*event)->marker = std::move(marker);
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<TpuEvent*>(event);
  }
  // Work launched after this call already runs after the event's work: same queue.
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void* event) const override {
    return event == nullptr || translating_errors([&] { return marker_of(event).query(); });
  }
  void synchronizeEvent(void* event) const override {
    if (event == nullptr) return;
    translating_errors([&] {
      marker_of(event).await();
      exec::raise_failed_completed_checks();
    });
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start != nullptr && end != nullptr,
                "Both events must be recorded before calculating elapsed time.");
    return translating_errors([&] { return marker_of(start).elapsed_ms(marker_of(end)); });
  }

  // A stream's work is its device's work (one queue).
  bool queryStream(const c10::Stream& stream) const override {
    return translating_errors([&] { return exec::LaunchMarker(stream.device_index(), false).query(); });
  }
  void synchronizeStream(const c10::Stream& stream) const override {
    translating_errors([&] {
      exec::LaunchMarker(stream.device_index(), false).await();
      exec::raise_failed_completed_checks();
    });
  }
  // torch.tpu.synchronize(): every device's launched work, and failed runtime checks.
  void synchronizeDevice(const c10::DeviceIndex) const override {
    translating_errors([] { exec::synchronize(); });
  }
  // The allocator frees a buffer when its last tensor goes, and PJRT keeps a buffer alive
  // through the launches that use it: there is nothing to record.
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

}  // namespace tpu::aten
