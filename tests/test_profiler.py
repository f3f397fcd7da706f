"""torch.profiler sees the backend's work: with ProfilerActivity.PrivateUse1, compile, launch,
flush and transfer spans (host side) and every execution's device time (tpu events) appear in
key_averages() and in the exported Chrome trace."""

import json

import torch
from torch.profiler import ProfilerActivity, profile

import torch_tpu


def _profile(activities):
    a = torch.randn(48, 40, device="tpu")
    with profile(activities=activities) as p:
        for _ in range(3):
            b = (a @ a.t()).relu()
        b.cpu()
        with torch_tpu.eager_mode("fused"):
            (a.sin() @ a.t() * 3).sum().cpu()
    return p


def test_device_time_and_host_spans_in_key_averages():
    p = _profile([ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
    events = {e.key: e for e in p.key_averages()}
    mm = events["execute: aten::mm"]
    assert mm.count == 3 and mm.self_device_time_total > 0
    kernel = next(e for e in p.events() if e.name == "execute: aten::mm")
    assert kernel.device_type == torch.autograd.DeviceType.PrivateUse1 and kernel.device_index == 0
    graphs = [e for k, e in events.items() if k.startswith("execute: fused graph of")]
    assert len(graphs) == 1 and graphs[0].self_device_time_total > 0
    assert events["launch: aten::mm"].count == 3 and events["launch: aten::mm"].cpu_time_total > 0
    assert any(k.startswith("flush: fused graph of") for k in events)
    assert "transfer: device to host" in events
    # the device time the profiler reports is what torch_tpu measured for the same executions
    assert "aten::mm" in torch_tpu.metrics.program_times()


def test_chrome_trace_has_kernel_and_runtime_events(tmp_path):
    p = _profile([ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    ours = [
        e for e in json.loads(path.read_text())["traceEvents"] if "torch_tpu" in e.get("args", {})
    ]
    by_cat = {}
    for e in ours:
        by_cat.setdefault(e["cat"], []).append(e)
    assert {"kernel", "privateuse1_runtime", "gpu_memcpy"} <= set(by_cat), sorted(by_cat)
    kernels = [e for e in by_cat["kernel"] if e["name"] == "execute: aten::mm"]
    assert len(kernels) == 3 and all(e["dur"] > 0 for e in kernels)
    launches = [e for e in by_cat["privateuse1_runtime"] if e["name"] == "launch: aten::mm"]
    # each execution starts no earlier than its launch began
    assert all(k["ts"] >= min(launch["ts"] for launch in launches) for k in kernels)


def test_cpu_only_profiles_get_host_spans_but_no_device_events():
    # As CUDA runtime calls do, our host-side runtime spans belong to CPU activity.
    keys = {e.key for e in _profile([ProfilerActivity.CPU]).key_averages()}
    assert "aten::mm" in keys and "launch: aten::mm" in keys
    assert not any(k.startswith(("execute: ", "transfer: ")) for k in keys)
