"""torch_tpu.aten_graph: an ATen FX graph run as a loop of dispatcher calls equals PyTorch on CPU
at every size, raises the errors PyTorch raises, and names the user's line in fused-mode checks;
graphs with other nodes are refused by name (and run as FX's Python)."""

import inspect
import re

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import torch_tpu
from torch_tpu import aten_graph


def several_kinds_of_node(x, w):
    # Ops with several results and a list result (getitem), a number and a size where the schema
    # takes a tensor (mul.Tensor(t, 2), div.Tensor(t, n)), keyword and default arguments, sizes read and computed
    # (sym_size, //, *) and a size returned.
    n = x.shape[0]
    _, mean = torch.var_mean(x, dim=1, keepdim=True)
    first = torch.split(x, 2, dim=1)[0]
    top, where = x.max(dim=1)
    y = ((x - mean) * 2 + first.sum() + top.unsqueeze(1)) / n
    z = y.reshape(n // 2, -1).to(torch.float64)
    return z @ w.double()[: z.shape[1]], where, n * 3


def traced(fn, *example):
    return make_fx(fn, tracing_mode="symbolic")(*example)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_one_graph_equals_cpu_at_every_size(each_mode, dtype, noncontiguous):
    def example(n):  # traced at the layout it runs with, as Dynamo guards on strides
        return torch.randn(4, n).t() if noncontiguous else torch.randn(n, 4)

    graph = aten_graph.build(
        traced(several_kinds_of_node, example(6), torch.randn(8, 3)), lambda n: None
    )
    # The float64 product is of values rounded in `dtype`: compared at `dtype`'s tolerance.
    tolerance = {torch.float32: (1.3e-6, 1e-5), torch.bfloat16: (1.6e-2, 1e-2)}[dtype]
    for n in (4, 6, 10):
        x, w = example(n).to(dtype), torch.randn(8, 3, dtype=dtype)
        want = several_kinds_of_node(x, w)
        got = graph(x.to("tpu"), w.to("tpu"))
        assert got[2] == want[2] == 3 * n
        for g, c in zip(got[:2], want[:2]):
            assert g.device.type == "tpu" and g.dtype == c.dtype and g.shape == c.shape
            torch.testing.assert_close(g.cpu(), c, rtol=tolerance[0], atol=tolerance[1])


def test_errors_are_the_ops_own_at_the_failing_op():
    # The exception the op raises reaches the caller as it is: the class PyTorch raises on CPU,
    # the message FX's Python gets from the same op on tpu.
    def product(x, w):
        return torch.relu(x) @ w

    def pick(x):
        return x[5] * 2

    cases = [
        (product, (torch.randn(3, 4), torch.randn(4, 2)), (torch.randn(3, 4), torch.randn(5, 2))),
        (pick, (torch.randn(8, 2),), (torch.randn(3, 2),)),
    ]
    for fn, example, bad in cases:
        gm = traced(fn, *example)
        graph = aten_graph.build(gm, lambda n: None)
        with pytest.raises(Exception) as cpu:
            fn(*bad)
        with pytest.raises(Exception) as fx:
            gm(*(a.to("tpu") for a in bad))
        with pytest.raises(Exception) as ours:
            graph(*(a.to("tpu") for a in bad))
        assert type(ours.value) is type(fx.value) is type(cpu.value)
        assert str(ours.value) == str(fx.value)
        # Nothing is left half-done: the graph runs good inputs afterwards.
        good = graph(*(a.to("tpu") for a in example))
        torch.testing.assert_close(good.cpu(), fn(*example))


def test_a_failing_check_names_the_user_line_when_sizes_vary():
    # Recorded inline into a fused graph on every call (its sizes vary), a compiled graph's
    # device-side check still names the line of the user's code that made the failing node.
    def f(x, i):
        y = x * 2
        return y[i] + 1

    line = inspect.getsourcelines(f)[1] + 2
    compiled = torch.compile(f, backend="tpu", dynamic=True)
    with torch_tpu.eager_mode("fused"):
        for n in (5, 6, 7):
            x, i = torch.randn(n), torch.tensor([1, n - 1])
            torch.testing.assert_close(compiled(x.to("tpu"), i.to("tpu")).cpu(), f(x, i))
        with pytest.raises(IndexError, match="out of bounds.*" + re.escape(f"{__file__}:{line}")):
            compiled(torch.randn(8, device="tpu"), torch.tensor([1, 9], device="tpu")).cpu()


def test_compiled_graphs_run_as_aten_graphs_forward_and_backward(monkeypatch):
    built, build = [], aten_graph.build

    def recording_build(gm, user_line):
        built.append(build(gm, user_line))  # raises Unsupported for a graph FX's Python runs
        return built[-1]

    monkeypatch.setattr(aten_graph, "build", recording_build)

    def f(x, w):
        h = torch.nn.functional.layer_norm(x, x.shape[-1:]) @ w
        return h.softmax(-1).sum(0)

    compiled = torch.compile(f, backend="tpu", dynamic=True)
    w = torch.randn(8, 5)
    for n in (3, 4, 6):
        x = torch.randn(n, 8)
        xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
        xt, wt = x.to("tpu").requires_grad_(), w.to("tpu").requires_grad_()
        f(xc, wc).sum().backward()
        out = compiled(xt, wt)
        out.sum().backward()
        torch.testing.assert_close(out.cpu(), f(x, w))
        torch.testing.assert_close(xt.grad.cpu(), xc.grad)
        torch.testing.assert_close(wt.grad.cpu(), wc.grad)
    assert len(built) >= 2  # the forward and the backward graph


def test_a_graph_with_other_nodes_is_refused_by_name():
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    with pytest.raises(aten_graph.Unsupported, match="relu.*is not an ATen op"):
        aten_graph.build(gm, lambda n: None)
