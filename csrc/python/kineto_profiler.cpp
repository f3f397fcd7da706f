// torch.profiler on the tpu device: a Kineto activity profiler, registered through torch's
// PrivateUse1 profiler registry, that hands Kineto the backend's own spans (exec/timeline.h)
// when a trace with ProfilerActivity.PrivateUse1 stops. Host-side work (compile, launch, flush,
// transfer) becomes PRIVATEUSE1_RUNTIME events; each execution's device time becomes a
// CONCURRENT_KERNEL event, which torch reports as a PrivateUse1 (tpu) device event with device
// time, in `key_averages()` and in `export_chrome_trace`.
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "IActivityProfiler.h"
#include "exec/timeline.h"
#include "libkineto.h"
#include "output_base.h"

namespace tpu::python {

namespace {

using libkineto::ActivityType;

libkineto::ActivityType kineto_type(exec::SpanKind kind) {
  switch (kind) {
    case exec::SpanKind::Execute:
      return ActivityType::CONCURRENT_KERNEL;
    case exec::SpanKind::Transfer:
      return ActivityType::GPU_MEMCPY;
    default:
      return ActivityType::PRIVATEUSE1_RUNTIME;
  }
}

class Session : public libkineto::IActivityProfilerSession {
 public:
  // A CPU-only trace asks for PRIVATEUSE1_RUNTIME (host events) but not for device events.
  explicit Session(std::set<ActivityType> wanted) : wanted_(std::move(wanted)) {}
  void start() override {
    exec::begin_collecting();
    status_ = libkineto::TraceStatus::RECORDING;
  }
  void stop() override {
    spans_ = exec::end_collecting();
    status_ = libkineto::TraceStatus::PROCESSING;
  }
  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->gpuOpCount = 0;
    for (const exec::Span& s : spans_) {
      if (buffer_->span.startTime == 0 || s.begin_ns < buffer_->span.startTime)
        buffer_->span.startTime = s.begin_ns;
      buffer_->span.endTime = std::max(buffer_->span.endTime, s.end_ns);
    }
    buffer_->span.name = "torch_tpu";
    const int32_t pid = static_cast<int32_t>(::getpid());
    for (const exec::Span& s : spans_) {
      const ActivityType type = kineto_type(s.kind);
      if (!wanted_.count(type)) continue;
      buffer_->emplace_activity(buffer_->span, type,
                                std::string(exec::span_kind_name(s.kind)) + ": " + s.name);
      auto& a = libkineto::CpuTraceBuffer::toRef(buffer_->activities.back());
      a.startTime = s.begin_ns;
      a.endTime = s.end_ns;
      // Device events sit on the device's row (device index, one stream); host events on the
      // process's row.
      const bool on_device = type != ActivityType::PRIVATEUSE1_RUNTIME;
      a.device = on_device ? s.device : pid;
      a.resource = on_device ? 0 : pid;
      a.addMetadataQuoted("torch_tpu", exec::span_kind_name(s.kind));
      if (on_device) buffer_->gpuOpCount++;
      logger.handleActivity(a);
    }
    status_ = libkineto::TraceStatus::READY;
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override { return nullptr; }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return {}; }
  // Kineto keeps the buffer (the logger holds pointers into it) for the trace's lifetime.
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

 private:
  std::set<ActivityType> wanted_;
  std::vector<exec::Span> spans_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
};

class TpuActivityProfiler : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return activities_; }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config&) override {
    std::set<ActivityType> wanted;
    for (ActivityType t : activity_types)
      if (activities_.count(t)) wanted.insert(t);
    return wanted.empty() ? nullptr : std::make_unique<Session>(std::move(wanted));
  }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                 const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_ = "torch_tpu";
  std::set<ActivityType> activities_ = {ActivityType::PRIVATEUSE1_RUNTIME, ActivityType::CONCURRENT_KERNEL,
                                        ActivityType::GPU_MEMCPY};
};

}  // namespace

void register_kineto_profiler() {
  torch::profiler::impl::PrivateUse1ProfilerRegistry::instance().registerFactory(
      [] { return std::make_unique<TpuActivityProfiler>(); });
}

}  // namespace tpu::python
