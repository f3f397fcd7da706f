"""Streams and events on `tpu`: torch.tpu.Stream/Event, the generic torch.Stream/torch.Event and
torch.accelerator API, record_stream, and torch.compile code that uses streams.

Every stream of a device is its one PJRT queue; events mark launched work and really wait for
it. Timing is only checked for sanity (positive, no more than the wall time around it)."""

import os
import subprocess
import sys
import threading
import time

import pytest
import torch
from op_check import assert_same

import torch_tpu

N = 512


def _chain(a, b, steps):
    for _ in range(steps):
        a = a @ b
    return a


def _operands(seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(N, N, generator=g)
    b = torch.randn(N, N, generator=g) / N**0.5  # keeps the chain's values near 1
    return a, b


def _steps_for(seconds):
    """Chain length whose run takes at least `seconds` on this machine (measured in strict mode).

    The fastest of three measurements: one taken while other processes held the cores would
    give a chain that an idle machine finishes before the test can look at it."""
    a, b = _operands()
    a, b = a.to("tpu"), b.to("tpu")
    with torch_tpu.eager_mode("strict"):
        _chain(a, b, 2).cpu()  # compiles
        per_step = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            _chain(a, b, 4).cpu()
            per_step = min(per_step, (time.perf_counter() - t0) / 4)
    return max(4, int(seconds / per_step))


@pytest.fixture(scope="module")
def long_steps():
    return _steps_for(0.5)


def test_event_query_is_false_while_its_work_runs(each_mode, long_steps):
    a, b = _operands()
    x, w = a.to("tpu"), b.to("tpu")
    _chain(x, w, 2).cpu()  # compiled outside the timed part
    torch.tpu.synchronize()
    y = _chain(x, w, long_steps)
    event = torch.tpu.Event()
    event.record()
    if each_mode == "debug":
        assert event.query()  # debug mode waits for every op
    else:
        assert not event.query()
    event.synchronize()
    assert event.query()
    assert_same(y, _chain(a, b, long_steps), atol=1e-3, rtol=1e-3)


def test_event_synchronize_waits_for_its_work_only():
    a, b = _operands()
    x, w = a.to("tpu"), b.to("tpu")
    steps = _steps_for(0.5)
    y = _chain(x, w, 1)
    first = torch.tpu.Event()
    first.record()
    z = _chain(y, w, steps)
    second = torch.tpu.Event()
    second.record()
    first.synchronize()
    assert first.query()
    assert not second.query()  # the later work still runs
    second.synchronize()
    assert second.query()
    assert_same(z, _chain(_chain(a, b, 1), b, steps), atol=1e-3, rtol=1e-3)


def test_fused_mode_record_keeps_the_graph_and_query_runs_it():
    x = torch.randn(64, device="tpu")
    torch.tpu.synchronize()
    with torch_tpu.eager_mode("fused"):
        y = (x * 2).sin() + 1
        size = torch_tpu._C._graph_size()
        assert size > 0
        event = torch.tpu.Event()
        event.record()
        assert torch_tpu._C._graph_size() == size  # recording does not cut the graph
        event.synchronize()  # runs the graph and waits for it
        assert torch_tpu._C._graph_size() == 0
        assert event.query()
        assert_same(y, (x.cpu() * 2).sin() + 1)


def test_elapsed_time_is_positive_and_within_the_wall_time(each_mode, long_steps):
    a, b = _operands()
    x, w = a.to("tpu"), b.to("tpu")
    _chain(x, w, 2).cpu()
    torch.tpu.synchronize()
    start = torch.tpu.Event(enable_timing=True)
    end = torch.tpu.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    _chain(x, w, long_steps)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    wall_ms = (time.perf_counter() - t0) * 1000
    assert 0 < ms <= wall_ms
    assert isinstance(ms, float)


def test_elapsed_time_errors_are_torchs():
    timed = torch.tpu.Event(enable_timing=True)
    untimed = torch.tpu.Event()
    with pytest.raises(ValueError, match="must be recorded before calculating elapsed time"):
        timed.elapsed_time(torch.tpu.Event(enable_timing=True))
    timed.record()
    untimed.record()
    with pytest.raises(ValueError, match="created with argument 'enable_timing=True'"):
        timed.elapsed_time(untimed)
    with pytest.raises(ValueError, match="must be recorded before calculating elapsed time"):
        timed.elapsed_time(torch.tpu.Event(enable_timing=True))


def test_elapsed_time_of_unfinished_work_raises(long_steps):
    a, b = _operands()
    x, w = a.to("tpu"), b.to("tpu")
    start = torch.tpu.Event(enable_timing=True)
    end = torch.tpu.Event(enable_timing=True)
    start.record()
    _chain(x, w, long_steps)
    end.record()
    with pytest.raises(RuntimeError, match="Both events must be completed"):
        start.elapsed_time(end)
    end.synchronize()
    assert start.elapsed_time(end) > 0


def test_event_record_on_a_stream_of_another_device_type():
    with pytest.raises(
        RuntimeError,
        match="Event device type TPU does not match recording stream's device type CPU",
    ):
        torch.tpu.Event().record(torch.Stream(device="cpu"))


def test_event_synchronize_raises_a_failed_check_of_its_work(each_mode):
    x = torch.zeros(3, device="tpu")
    index = torch.tensor([5], device="tpu")
    with pytest.raises(IndexError, match="out of bounds"):
        y = x[index]  # debug mode raises here, the others at the synchronize
        event = torch.tpu.Event()
        event.record()
        event.synchronize()
        del y


def test_stream_api(long_steps):
    s = torch.tpu.Stream(priority=-1)
    assert isinstance(s, torch.Stream)
    assert s.device == torch.device("tpu", 0) and s.priority == 0
    assert s != torch.tpu.default_stream() and s.stream_id != torch.tpu.Stream().stream_id
    assert torch.tpu.current_stream() == torch.tpu.default_stream()
    assert torch.tpu.default_stream().stream_id == 0
    a, b = _operands()
    x, w = a.to("tpu"), b.to("tpu")
    _chain(x, w, long_steps)
    assert not s.query()  # one queue per device: a stream sees all of its device's work
    event = s.record_event()
    assert isinstance(event, torch.tpu.Event)
    s.wait_event(event)
    s.wait_stream(torch.tpu.current_stream())
    s.synchronize()
    assert s.query() and event.query()


def test_stream_context_manager_selects_and_restores():
    s = torch.tpu.Stream()
    default = torch.tpu.current_stream()
    with torch.tpu.stream(s):
        assert torch.tpu.current_stream() == s
        assert torch.accelerator.current_stream() == s
        y = torch.arange(4.0, device="tpu") * 3
    assert torch.tpu.current_stream() == default
    assert_same(y, torch.arange(4.0) * 3)
    with torch.tpu.stream(None):
        assert torch.tpu.current_stream() == default
    with s:  # the torch.Stream spelling
        assert torch.tpu.current_stream() == s
    assert torch.tpu.current_stream() == default
    torch.tpu.set_stream(s)
    try:
        assert torch.tpu.current_stream() == s
    finally:
        torch.tpu.set_stream(default)


def test_current_stream_is_per_thread():
    s = torch.tpu.Stream()
    seen = []
    with torch.tpu.stream(s):
        t = threading.Thread(target=lambda: seen.append(torch.tpu.current_stream()))
        t.start()
        t.join()
        assert torch.tpu.current_stream() == s
    assert seen == [torch.tpu.default_stream()]


def test_generic_torch_stream_event_and_accelerator_api():
    assert torch.get_device_module("tpu").Stream is torch.tpu.Stream
    assert torch.get_device_module("tpu").Event is torch.tpu.Event
    s = torch.Stream(device="tpu")
    assert s.device_type == torch.tpu.Stream().device_type and s.stream_id != 0
    assert torch.accelerator.current_stream() == torch.tpu.current_stream()
    torch.accelerator.set_stream(s)
    try:
        assert torch.tpu.current_stream() == s
    finally:
        torch.accelerator.set_stream(torch.tpu.default_stream())
    x = torch.randn(256, 256, device="tpu")
    event = torch.Event(device="tpu", enable_timing=True)
    start = torch.Event(device="tpu", enable_timing=True)
    start.record()
    y = x @ x
    event.record(s)
    event.synchronize()
    assert event.query() and event.device == torch.device("tpu", 0)
    assert start.elapsed_time(event) >= 0
    torch.accelerator.synchronize()
    assert_same(y, x.cpu() @ x.cpu(), atol=1e-3, rtol=1e-3)


def test_record_stream():
    x = torch.randn(8, device="tpu")
    x.record_stream(torch.tpu.Stream())
    x.record_stream(torch.tpu.current_stream())
    with pytest.raises(
        RuntimeError, match="record_stream: the stream must be on the tensor's device tpu:0"
    ):
        x.record_stream(torch.Stream(device="cpu"))
    assert_same(x * 1, x.cpu())


def test_torch_compile_traces_stream_code():
    def f(x, event):
        s = torch.tpu.current_stream()
        event.record(s)
        with torch.tpu.stream(s):
            y = x * 2
        s.wait_event(event)
        return y + 1

    torch._dynamo.reset()
    x = torch.randn(5, device="tpu")
    event = torch.tpu.Event()
    y = torch.compile(f, backend="tpu", fullgraph=True)(x, event)
    assert_same(y, x.cpu() * 2 + 1)
    assert event.query()


def test_device_interface_has_streams():
    from torch._dynamo.device_interface import get_interface_for_device

    interface = get_interface_for_device("tpu")
    assert interface.Stream is torch.tpu.Stream and interface.Event is torch.tpu.Event
    assert interface.current_stream() == torch.tpu.current_stream()
    assert interface.stream is torch.tpu.stream and interface.set_stream is torch.tpu.set_stream


TWO_DEVICES = r"""
import torch, torch_tpu
s1 = torch.tpu.Stream(device=1)
assert s1.device == torch.device("tpu", 1)
with torch.tpu.stream(s1):
    assert torch.tpu.current_device() == 1
    assert torch.tpu.current_stream() == s1
    assert torch.tpu.current_stream(0) == torch.tpu.default_stream(0)
assert torch.tpu.current_device() == 0 and torch.tpu.current_stream(1) == torch.tpu.default_stream(1)
event = torch.tpu.Event()
event.record(torch.tpu.default_stream(0))
try:
    event.record(s1)
except RuntimeError as e:
    print(e)
x = torch.ones(3, device="tpu:1")
try:
    x.record_stream(torch.tpu.default_stream(0))
except RuntimeError as e:
    print(e)
e1 = torch.tpu.Event()
e1.record(s1)
e1.synchronize()
print("ok", e1.query(), e1.device)
"""


def test_streams_and_events_of_two_devices():
    env = dict(os.environ, TORCH_TPU_CPU_DEVICE_COUNT="2")
    out = subprocess.run(
        [sys.executable, "-c", TWO_DEVICES], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "Event device index 0 does not match recording stream's device index 1."
    assert lines[1].startswith("record_stream: the stream must be on the tensor's device tpu:1")
    assert lines[2] == "ok True tpu:1"
