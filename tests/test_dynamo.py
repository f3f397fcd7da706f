"""torch.compile(backend="tpu"): compiled forward, backward and optimizer steps equal eager
(PyTorch CPU) results; graphs compile once; mutations reach the caller; other backends are
untouched."""

import copy
import inspect
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points

import pytest
import torch
import torch.nn.functional as F
from models import GPT, MLP, CachedDecoder, ResNet

import torch_tpu


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def compiles():
    return torch_tpu.metrics.counters()["compiles"]


def replays():
    return torch_tpu.metrics.counters()["graph_replays"]


def test_backend_is_registered_through_the_entry_point():
    assert "tpu" in entry_points(group="torch_dynamo_backends").names
    assert "tpu" in torch._dynamo.list_backends()


@pytest.mark.parametrize("noncontiguous", [False, True])
def test_compiled_mlp_forward_and_backward_equal_cpu(noncontiguous):
    torch.manual_seed(0)
    cpu = MLP(16, 32, 4)
    tpu = copy.deepcopy(cpu).to("tpu")
    base = torch.randn(8, 32)
    x = base[:, ::2] if noncontiguous else base[:, :16].contiguous()
    xt = base.to("tpu")[:, ::2] if noncontiguous else x.to("tpu")
    assert xt.is_contiguous() != noncontiguous
    compiled = torch.compile(tpu, backend="tpu")
    out = compiled(xt)
    ref = cpu(x)
    assert out.device.type == "tpu" and out.dtype == ref.dtype and out.shape == ref.shape
    torch.testing.assert_close(out.cpu(), ref.detach())
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    for (name, p), q in zip(tpu.named_parameters(), cpu.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, msg=name)


def test_compiled_function_of_several_dtypes_equals_cpu():
    def f(a, b, i):
        return torch.where(a > 0, a * b, b - 1).sum(0), (i * 3 + 1).cumsum(0)

    compiled = torch.compile(f, backend="tpu")
    for dtype in (torch.float32, torch.bfloat16):
        a, b = torch.randn(5, 7, dtype=dtype), torch.randn(5, 7, dtype=dtype)
        i = torch.randint(-5, 5, (6,))
        got = compiled(a.to("tpu"), b.to("tpu"), i.to("tpu"))
        for g, e in zip(got, f(a, b, i)):
            assert g.dtype == e.dtype and g.shape == e.shape
            torch.testing.assert_close(g.cpu(), e)


@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_dtype_casts_equal_cpu_values_strides_and_gradients(dynamic):
    # AOTAutograd writes the casts as prims.convert_element_type; the backend runs them as
    # aten._to_copy, which must keep their values, dtypes and (for dense inputs) strides.
    def f(a, b):
        h = a.float() * 2 + b.to(torch.bfloat16).to(torch.float32)
        return h.to(torch.bfloat16), h.t().to(torch.float64)

    compiled = torch.compile(f, backend="tpu", dynamic=dynamic)
    for rows in (5, 9):
        base = torch.randn(7, rows * 2, dtype=torch.bfloat16)
        a = base[:, ::2].t()  # non-contiguous
        b = torch.randn(rows, 7, dtype=torch.float32)
        at = base.to("tpu")[:, ::2].t().requires_grad_()
        bt = b.to("tpu").requires_grad_()
        a.requires_grad_(), b.requires_grad_()
        got, want = compiled(at, bt), f(a, b)
        for g, e in zip(got, want):
            assert g.dtype == e.dtype and g.shape == e.shape and g.stride() == e.stride()
            torch.testing.assert_close(g.cpu(), e)
        (got[0].float().sum() + got[1].pow(2).sum()).backward()
        (want[0].float().sum() + want[1].pow(2).sum()).backward()
        for g, e in ((at.grad, a.grad), (bt.grad, b.grad)):
            assert g.dtype == e.dtype
            torch.testing.assert_close(g.cpu(), e)


def train_gpt(device, steps, compile_model, compile_step, capturable=False):
    torch.manual_seed(0)
    model = GPT(layers=2, width=64).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=capturable)
    idx = torch.randint(0, 256, (4, 16))
    x, y = idx.to(device), torch.roll(idx, -1, 1).to(device)
    run = torch.compile(model, backend="tpu") if compile_model else model

    def step():
        opt.step()

    opt_step = torch.compile(step, backend="tpu") if compile_step else step
    losses, compiled = [], []
    for _ in range(steps):
        before = compiles()
        loss = run(x, y)
        opt.zero_grad()
        loss.backward()
        opt_step()
        losses.append(loss.item())
        compiled.append(compiles() - before)
    return losses, compiled, model, opt


@pytest.mark.parametrize("capturable", [False, True])
def test_compiled_gpt_training_loop_equals_eager_and_stops_compiling(capturable):
    ref, _, ref_model, _ = train_gpt("cpu", 50, False, False)
    before = replays()
    losses, compiled, model, opt = train_gpt("tpu", 50, True, True, capturable)
    assert losses == pytest.approx(ref, rel=2e-4, abs=2e-4)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=2e-4, rtol=2e-4)
    # AdamW's first steps initialise its state; from then on nothing compiles.
    assert sum(compiled[3:]) == 0, compiled
    # As for CUDA parameters, compiling the step makes it capturable (step counters on tpu), so
    # forward, backward and the optimizer step all replay their captured programs.
    assert all(g["capturable"] for g in opt.param_groups)
    assert replays() - before >= 3 * (50 - 3)


def test_replay_needs_the_capture_input_layout():
    # Same sizes and strides (Dynamo's guards pass), but the second input is a view at an
    # offset into a larger storage: the captured program does not fit it, so it records again.
    def f(x, w):
        return (x * w).sum(0) + x[0]

    compiled = torch.compile(f, backend="tpu")
    w = torch.randn(16)
    replayed = []
    for x in (torch.randn(8, 16), torch.randn(8, 16), torch.randn(9, 16)[1:], torch.randn(8, 16)):
        before = replays()
        xt = torch.randn(9, 16, device="tpu")[1:].copy_(x) if x.storage_offset() else x.to("tpu")
        got = compiled(xt, w.to("tpu"))
        torch.testing.assert_close(got.cpu(), f(x, w))
        assert got.device.type == "tpu" and got.dtype == torch.float32
        replayed.append(replays() - before)
    # Call 2 replays call 1's capture; call 3 records (and captures) for the view layout;
    # call 4 replays the first capture again.
    assert replayed == [0, 1, 0, 1]


def test_compiled_random_ops_draw_new_numbers_every_call():
    def f(x):
        return torch.nn.functional.dropout(x, 0.5, training=True) + 1

    compiled = torch.compile(f, backend="tpu")
    x = torch.ones(4096, device="tpu")
    first, second = compiled(x).cpu(), compiled(x).cpu()
    assert not torch.equal(first, second)
    for out in (first, second):
        assert set(out.unique().tolist()) == {1.0, 3.0}


class Counter(torch.nn.Module):
    """Mutates buffers in forward, as batch-norm statistics and KV caches do."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))
        self.register_buffer("cache", torch.zeros(2, 6, 4))

    def forward(self, x, pos):
        self.calls.add_(1)
        self.cache[:, pos] = x
        return (self.cache * 2).sum(1)


def test_buffer_mutations_reach_the_module_inference_mode():
    cpu = Counter()
    tpu = copy.deepcopy(cpu).to("tpu")
    compiled = torch.compile(tpu, backend="tpu")
    with torch.no_grad():
        for pos in range(3):
            x = torch.randn(2, 4)
            got = compiled(x.to("tpu"), pos)
            ref = cpu(x, pos)
            torch.testing.assert_close(got.cpu(), ref)
    torch.testing.assert_close(tpu.cache.cpu(), cpu.cache)
    assert tpu.calls.item() == 3


def generate(model, forward, prompt, new_tokens):
    """Greedy decoding with the model's static KV cache: one prefill call, then one call per
    token, each at its cache position."""
    device = prompt.device
    model.k_cache.zero_()
    model.v_cache.zero_()
    logits = forward(prompt, torch.arange(prompt.shape[1], device=device))
    tokens = []
    for i in range(new_tokens):
        tokens.append(logits[:, -1].argmax(-1, keepdim=True))
        logits = forward(tokens[-1], torch.tensor([prompt.shape[1] + i], device=device))
    return torch.cat(tokens, 1), logits


def graphs():
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def test_static_kv_cache_generation_compiles_once_per_shape_bucket():
    torch.manual_seed(0)
    cpu = CachedDecoder()
    tpu = copy.deepcopy(cpu).to("tpu")
    for cache in (tpu.k_cache, tpu.v_cache):
        torch._dynamo.mark_static_address(cache)
    # Hugging Face's recipe for static caches: whole graphs, static shapes.
    compiled = torch.compile(tpu, backend="tpu", fullgraph=True, dynamic=False)
    with torch.no_grad():
        for prompt_len, new_graphs in ((4, 2), (4, 0), (6, 1)):
            prompt = torch.randint(0, 64, (2, prompt_len))
            graphs_before, compiles_before, replays_before = graphs(), compiles(), replays()
            tokens, logits = generate(tpu, compiled, prompt.to("tpu"), 8)
            ref_tokens, ref_logits = generate(cpu, cpu, prompt, 8)
            assert torch.equal(tokens.cpu(), ref_tokens)
            torch.testing.assert_close(logits.cpu(), ref_logits)
            torch.testing.assert_close(tpu.k_cache.cpu(), cpu.k_cache)
            torch.testing.assert_close(tpu.v_cache.cpu(), cpu.v_cache)
            # The first generation traces prefill and decode; the same prompt length again
            # compiles nothing; a new prompt length adds its prefill graph only.
            assert graphs() - graphs_before == new_graphs
            if new_graphs == 0:
                assert compiles() == compiles_before
            assert replays() - replays_before >= 8 - new_graphs


def test_outputs_that_alias_inputs_or_each_other_stay_views():
    def f(x, buf):
        buf.add_(1)
        y = x * 2
        return x.t(), x[1:], buf, y, y.view(-1)

    compiled = torch.compile(f, backend="tpu")
    results = {}
    for device, fn in (("cpu", f), ("tpu", compiled)):
        x, buf = torch.arange(6.0).view(2, 3).to(device), torch.zeros(3, device=device)
        for _ in range(2):  # the second call replays the captured program
            t, s, b, y, flat = fn(x, buf)
        assert b is buf
        assert t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert flat.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
        x.mul_(10)  # writes through the input reach the views returned of it, and so on
        y.add_(100)
        results[device] = [r.cpu() for r in (t, s, buf, flat)]
    for got, ref in zip(results["tpu"], results["cpu"]):
        torch.testing.assert_close(got, ref)


def test_graph_breaks_run_each_graph_and_eager_between():
    def f(x):
        y = x.sin() * 2
        if y.sum().item() > 0:  # a graph break: a value decides Python control flow
            y = y + 1
        print("between graphs")
        return y.cos()

    x = torch.randn(10)
    got = torch.compile(f, backend="tpu")(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), f(x))


@pytest.mark.parametrize("how", ["dynamic=True", "mark_dynamic", "automatic"])
def test_compiled_sizes_share_one_program_per_bucket(how, small_buckets):
    # Dynamo traces one graph with a symbolic batch size (dynamic=True, mark_dynamic with bounds,
    # or its automatic dynamic after a second size); forward and backward then compile once per
    # bucket (buckets 16, 32, 64 here), and no guard fails on a new size.
    import torch._dynamo.utils

    torch.manual_seed(0)
    cpu = MLP(8, 16, 4)
    tpu = copy.deepcopy(cpu).to("tpu")
    compiled = torch.compile(tpu, backend="tpu", dynamic=True if how == "dynamic=True" else None)

    def step(n):
        x = torch.randn(n, 8)
        xt = x.to("tpu")
        if how == "mark_dynamic":
            torch._dynamo.mark_dynamic(xt, 0, min=2, max=64)
        got = compiled(xt)
        want = cpu(x)
        torch.testing.assert_close(got.cpu(), want.detach(), atol=1e-5, rtol=1e-5)
        got.square().sum().backward()
        want.square().sum().backward()
        for p, q in zip(tpu.parameters(), cpu.parameters()):
            torch.testing.assert_close(p.grad.cpu(), q.grad, atol=1e-4, rtol=1e-4)
            p.grad, q.grad = None, None

    torch._dynamo.utils.counters.clear()
    for n in (17, 18, 19, 20, 21):
        step(n)
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    before = torch_tpu.metrics.counters()
    for n in (23, 29, 31):
        step(n)
    after = torch_tpu.metrics.counters()
    assert after["compiles"] == before["compiles"]
    assert after["padded_launches"] > before["padded_launches"]
    for n in (33, 47, 5):
        step(n)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs


def test_warm_process_compiles_nothing(tmp_path):
    code = (
        f"import sys, torch, torch_tpu; sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from models import MLP\n"
        "torch.manual_seed(0); m = torch.compile(MLP(16, 32, 4).to('tpu'), backend='tpu')\n"
        "m(torch.randn(8, 16, device='tpu')).sum().backward(); torch_tpu.sync()\n"
        "c = torch_tpu.metrics.counters(); print(c['compiles'], c['disk_hits'])\n"
    )
    env = {**os.environ, "TORCH_TPU_CACHE_DIR": str(tmp_path)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
        )
        for _ in range(2)
    ]
    (cold_compiles, _), (warm_compiles, warm_hits) = (map(int, r.stdout.split()) for r in runs)
    assert cold_compiles > 0 and warm_compiles == 0 and warm_hits > 0, [
        r.stderr[-2000:] for r in runs
    ]


def test_recompile_log_explains_a_new_batch_size(capfd):
    # With static shapes, a new batch size makes Dynamo trace a new graph; its XLA program has
    # the structure of the first one, and the log says which input changed. The sizes are used
    # by no other test, so the process's compile cache cannot already hold either program; the
    # sizes other tests ran this graph structure at are forgotten, so the first batch is exact.
    torch_tpu._C._forget_varied_sizes()
    compiled = torch.compile(MLP(13, 29, 3).to("tpu"), backend="tpu", dynamic=False)
    torch_tpu._C._set_log_recompiles(True)
    try:
        for batch in (7, 11):
            x = torch.randn(batch, 13)
            compiled(x.to("tpu")).sum().item()
    finally:
        torch_tpu._C._set_log_recompiles(False)
    err = capfd.readouterr().err
    assert "recompiling" in err and "[7, 13]" in err and "[11, 13]" in err, err


def test_recompile_log_says_once_why_a_graph_is_recorded_on_every_call(capfd):
    # A graph whose sizes vary is recorded on every call; a loop over sizes (a decode loop) gets
    # the reason once, not once per call. The results still equal CPU.
    def f(x):
        return (x * 2).softmax(-1)

    compiled = torch.compile(f, backend="tpu", dynamic=True)
    torch_tpu._C._set_log_recompiles(True)
    try:
        for n in (21, 22, 23, 24, 25):
            x = torch.randn(3, n)
            got = compiled(x.to("tpu"))
            torch.testing.assert_close(got.cpu(), f(x))
    finally:
        torch_tpu._C._set_log_recompiles(False)
    err = capfd.readouterr().err
    assert err.count("is recorded again on every call: its symbolic sizes change") == 1, err


def test_compiled_graph_whose_sizes_change_joins_the_eager_work_around_it():
    # A decode loop: eager bookkeeping, a compiled model step whose sizes grow by one per call,
    # eager bookkeeping again. In fused mode each step is one graph (one launch), not three
    # programs compiled again for every bucket, and the results equal CPU.
    def model_step(tokens, weight):
        h = weight[tokens] * (tokens.shape[1] ** -0.5)
        return h.sum(1).softmax(-1)

    compiled = torch.compile(model_step, backend="tpu", dynamic=True)

    def run(fn, tokens, weight, steps):
        for _ in range(steps):
            last = tokens[:, -1:].clone()
            probs = fn(tokens, weight)
            nxt = (probs.argmax(-1, keepdim=True) + last) % weight.shape[0]
            tokens = torch.cat([tokens, nxt], dim=1)
            if tokens.device.type == "tpu":
                torch_tpu.sync()
        return tokens

    weight = torch.randn(50, 8)
    tokens = torch.tensor([[3, 1, 4], [1, 5, 9]])
    want = run(model_step, tokens, weight, 14)
    with torch_tpu.eager_mode("fused"):
        t, w = tokens.to("tpu"), weight.to("tpu")
        t = run(compiled, t, w, 6)
        before = torch_tpu.metrics.counters()
        got = run(compiled, t, w, 8)
        after = torch_tpu.metrics.counters()
    assert after["executions"] - before["executions"] == 8
    assert after["compiles"] == before["compiles"]
    assert got.device.type == "tpu" and got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.cpu(), want)


def test_other_devices_keep_their_default_backend():
    # With torch_tpu imported, the default backend (inductor) still compiles CPU code.
    def f(x):
        return F.gelu(x) * 2

    x = torch.randn(33)
    assert torch._dynamo.config is not None
    torch.testing.assert_close(torch.compile(f)(x), f(x))
    assert torch._dynamo.list_backends().count("tpu") == 1


def test_runtime_error_in_a_compiled_graph_names_the_user_line():
    def f(x, i):
        y = x * 2
        return y[i] + 1

    line = inspect.getsourcelines(f)[1] + 2
    x, i = torch.randn(5, device="tpu"), torch.tensor([1, 7], device="tpu")
    with pytest.raises(
        IndexError, match=re.escape("out of bounds") + ".*" + re.escape(f"{__file__}:{line}")
    ):
        torch.compile(f, backend="tpu")(x, i).cpu()


def test_compiled_one_hot_keeps_its_class_range_assertions():
    # one_hot decomposes to comparisons and two aten._assert_async.msg checks in a compiled graph.
    f = torch.compile(lambda i: F.one_hot(i, 4).sum(0), backend="tpu", fullgraph=True)
    i = torch.tensor([0, 3, 3, 1])
    out = f(i.to("tpu"))
    assert out.dtype == torch.int64 and out.cpu().tolist() == F.one_hot(i, 4).sum(0).tolist()
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        f(torch.tensor([0, 4, 1, 1], device="tpu")).cpu()


def test_compiled_cnn_with_batch_norm_equals_cpu_including_running_stats():
    torch.manual_seed(0)
    cpu = ResNet(width=8, blocks=(1, 1))
    tpu = copy.deepcopy(cpu).to("tpu")
    compiled = torch.compile(tpu, backend="tpu")
    before = replays()
    for _ in range(3):
        x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
        loss = compiled(x.to("tpu"), y.to("tpu"))
        ref = cpu(x, y)
        torch.testing.assert_close(loss.cpu(), ref.detach(), atol=1e-5, rtol=1e-4)
        loss.backward()
        ref.backward()
    for (name, p), q in zip(tpu.named_parameters(), cpu.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, atol=1e-4, rtol=1e-4, msg=name)
    assert replays() - before >= 4  # calls 2 and 3 replay forward and backward
    for (name, b), c in zip(tpu.named_buffers(), cpu.buffers()):
        torch.testing.assert_close(b.cpu(), c, atol=1e-5, rtol=1e-5, msg=name)  # running stats
    tpu.eval()
    cpu.eval()
    with torch.no_grad():
        x = torch.randn(2, 3, 16, 16)
        torch.testing.assert_close(compiled(x.to("tpu")).cpu(), cpu(x), atol=1e-5, rtol=1e-4)
