"""Missing ops are never silent; metrics count what ran, compiled and moved."""

import warnings

import pytest
import torch
from op_check import assert_same

import torch_tpu

# An op with a CPU kernel and no tpu one, defined here so that the test does not depend on
# which ATen ops are still missing. It reaches the backend as any unlowered ATen op does.
_LIB = torch.library.Library("torch_tpu_test", "DEF")
_LIB.define("missing(Tensor x) -> Tensor")
_LIB.impl("missing", lambda x: x * 2 + 1, "CPU")


def MISSING(t):  # noqa: N802 - reads as the constant it stands for
    return torch.ops.torch_tpu_test.missing(t)


MISSING_NAME = "torch_tpu_test::missing"


def test_missing_op_raises_not_implemented_naming_the_op():
    x = torch.ones(3, device="tpu")
    with pytest.raises(NotImplementedError, match=MISSING_NAME):
        MISSING(x)
    # The process stays usable.
    assert torch.equal(x.cpu(), torch.ones(3))


def test_cpu_fallback_warns_once_counts_and_matches_cpu():
    torch_tpu.metrics.reset()
    cpu = torch.linspace(0, 5, 7)
    x = cpu.to("tpu")
    with torch_tpu.cpu_fallback():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            first = MISSING(x)
            second = MISSING(x)
    assert_same(first, MISSING(cpu))
    assert_same(second, MISSING(cpu))
    messages = [str(m.message) for m in w if MISSING_NAME in str(m.message)]
    assert len(messages) <= 1  # once per op per process (may have warned in an earlier test)
    assert torch_tpu.metrics.fallback_counts()[MISSING_NAME] == 2
    assert torch_tpu.metrics.counters()["fallbacks"] == 2
    with pytest.raises(NotImplementedError):
        MISSING(x)


def test_metrics_count_compiles_hits_and_transfers():
    torch_tpu.metrics.reset()
    x = torch.randn(17, 3).to("tpu")
    c = torch_tpu.metrics.counters()
    assert c["h2d_transfers"] >= 1 and c["h2d_bytes"] >= 17 * 3 * 4
    for _ in range(3):
        x.fill_(1.25)
    c = torch_tpu.metrics.counters()
    assert c["ops_dispatched"] >= 3
    assert c["cache_hits"] >= 2
    x.cpu()
    c = torch_tpu.metrics.counters()
    assert c["d2h_transfers"] >= 1
    report = torch_tpu.metrics.report()
    assert "cache_hits" in report and "compile cache" in report
    info = torch_tpu.metrics.cache_info()
    assert info["size"] >= 1 and any(e["op"] == "aten::fill_.Scalar" for e in info["entries"])


def test_program_times_per_op_and_per_graph():
    torch_tpu.metrics.reset()
    a = torch.randn(64, 64, device="tpu")
    for _ in range(3):
        (a @ a).cpu()  # strict mode: aten::mm is its own program, run three times
    with torch_tpu.eager_mode("fused"):
        for _ in range(2):
            (a.sin() @ a + 1).sum().cpu()  # one fused graph, the same program both times
    times = torch_tpu.metrics.program_times()
    assert times["aten::mm"]["executions"] == 3
    graphs = {k: v for k, v in times.items() if k.startswith("fused graph of")}
    assert len(graphs) == 1 and next(iter(graphs.values()))["executions"] == 2
    for t in [times["aten::mm"], *graphs.values()]:
        assert t["launch_seconds"] > 0 and t["device_seconds"] > 0
    report = torch_tpu.metrics.report()
    assert (
        "execute time by program" in report
        and "aten::mm" in report
        and next(iter(graphs)) in report
    )
    torch_tpu.metrics.reset()
    assert torch_tpu.metrics.program_times() == {}


def test_changing_python_scalar_values_does_not_recompile():
    x = torch.zeros(5, device="tpu")
    x.fill_(0.5)
    x[0].item()
    torch_tpu.metrics.reset()
    for v in (0.1, 0.2, 3.0, -7.5):
        x.fill_(v)
        assert x[0].item() == pytest.approx(v)
    assert torch_tpu.metrics.counters()["compiles"] == 0


def test_compile_cache_stays_below_the_kernel_map_limit():
    # Every cached XLA:CPU executable keeps memory maps of its JIT code; past vm.max_map_count
    # LLVM cannot allocate and XLA crashes, so the in-memory cache is bounded well below it.
    with open("/proc/sys/vm/max_map_count") as f:
        limit = int(f.read())
    capacity = torch_tpu.metrics.cache_info()["capacity"]
    assert 0 < capacity <= max(limit // 16, 256)
