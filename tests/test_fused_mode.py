"""Fused eager mode: same results as strict, one program per training step, sync points,
mode scoping, explained recompiles."""

import subprocess
import sys

import pytest
import torch
from models import GPT

import torch_tpu


def test_mode_setters_nest_and_restore():
    assert torch_tpu.get_eager_mode() == "strict"
    with torch_tpu.eager_mode("fused"):
        assert torch_tpu.get_eager_mode() == "fused"
        with torch_tpu.eager_mode("debug"):
            assert torch_tpu.get_eager_mode() == "debug"
        assert torch_tpu.get_eager_mode() == "fused"
    assert torch_tpu.get_eager_mode() == "strict"


def test_env_selects_fused_mode():
    code = "import torch, torch_tpu; print(torch_tpu.get_eager_mode())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "TORCH_TPU_EAGER_MODE": "fused"},
        timeout=300,
    )
    assert out.stdout.strip() == "fused", out.stderr


def test_ops_are_deferred_until_a_value_is_needed():
    with torch_tpu.eager_mode("fused"):
        torch_tpu.sync()
        x = torch.arange(6.0, device="tpu")
        y = (x * 2 + 1).relu()
        z = y.sum()
        assert torch_tpu._C._graph_size() >= 3  # recorded, not run
        assert z.item() == 36.0  # .item() materializes
        assert torch_tpu._C._graph_size() == 0
        w = x * 3
        assert bool((w > 1).any())  # Python control flow on a tensor materializes
        assert torch_tpu._C._graph_size() == 0
        m = torch.nonzero(x > 2)  # data-dependent size materializes
        assert m.shape == (3, 1)
        s = str(x + 1)  # printing materializes
        assert "6." in s
        v = x * 5
        torch.tpu.synchronize()
        assert torch_tpu._C._graph_size() == 0
        assert torch.equal(v.cpu(), torch.arange(6.0) * 5)


def test_views_and_in_place_in_fused_mode_match_cpu():
    def run(device):
        x = torch.arange(24.0, device=device).view(4, 6)
        x[1:3, ::2].mul_(10)
        x.t()[0].add_(1)
        y = x[:, 1] * 2
        x.zero_() if device == "never" else None
        return x, y

    with torch_tpu.eager_mode("fused"):
        tx, ty = run("tpu")
        cx, cy = run("cpu")
        assert torch.equal(tx.cpu(), cx) and torch.equal(ty.cpu(), cy)


def test_random_streams_identical_across_modes():
    out = {}
    for mode in ("strict", "fused", "debug"):
        with torch_tpu.eager_mode(mode):
            torch.manual_seed(3)
            a = torch.randn(5, device="tpu")
            b = torch.nn.functional.dropout(torch.ones(8, device="tpu"), 0.5)
            out[mode] = (a.cpu(), b.cpu())
    for mode in ("fused", "debug"):
        assert torch.equal(out[mode][0], out["strict"][0])
        assert torch.equal(out[mode][1], out["strict"][1])


def gpt_losses(mode, steps, batch=4):
    torch.manual_seed(0)
    model = GPT(layers=2, width=64).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 256, (batch, 16))
    x, y = idx.to("tpu"), torch.roll(idx, -1, 1).to("tpu")
    losses, compiles = [], []
    with torch_tpu.eager_mode(mode):
        for _ in range(steps):
            before = torch_tpu.metrics.counters()["compiles"]
            loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            compiles.append(torch_tpu.metrics.counters()["compiles"] - before)
    return losses, compiles


def test_training_loop_fused_equals_strict_and_stops_compiling():
    strict, _ = gpt_losses("strict", 4)
    fused, compiles = gpt_losses("fused", 4)
    assert fused == pytest.approx(strict, rel=1e-5, abs=1e-5)
    assert compiles[2:] == [0, 0], compiles  # one executable per step, reused


def test_recompile_log_names_the_changed_input(capfd):
    torch_tpu._C._set_log_recompiles(True)
    try:
        with torch_tpu.eager_mode("fused"):
            for batch in (3, 5):
                x = torch.ones(batch, 7, device="tpu")
                (x * 2).sum().item()
    finally:
        torch_tpu._C._set_log_recompiles(False)
    err = capfd.readouterr().err
    assert "recompiling" in err
    assert "[3, 7]" in err and "[5, 7]" in err


def test_state_initialisation_loop_is_one_graph_not_one_per_tensor():
    # As a capturable optimizer creates its state: the loop's first op repeats every iteration
    # but reads nothing, so it does not mark the sequence as repeating (one graph, one program),
    # and the state is not padded as if one tensor's sizes had varied.
    shapes = [(7, 3), (5,), (4, 6), (9,), (2, 2, 2)]
    with torch_tpu.eager_mode("fused"):
        params = [torch.randn(s).to("tpu") for s in shapes]
        torch_tpu.sync()
        before = torch_tpu.metrics.counters()["compiles"]
        states = [
            (torch.zeros((), device="tpu"), torch.zeros_like(p), torch.full_like(p, 2.0))
            for p in params
        ]
        torch_tpu.sync()
        assert torch_tpu.metrics.counters()["compiles"] - before <= 1
    for shape, (step, a, b) in zip(shapes, states):
        for got, want in (
            (step, torch.zeros(())),
            (a, torch.zeros(shape)),
            (b, torch.full(shape, 2.0)),
        ):
            assert got.device.type == "tpu" and got.dtype == want.dtype and got.shape == want.shape
            assert torch.equal(got.cpu(), want)
        assert torch_tpu.dynamism.get_dynamism_info(a) == []


def test_two_alike_ops_in_a_row_do_not_cut_a_decode_step_in_two():
    # As Hugging Face's decode step starts: it clones the last token and the last position, two
    # [1, 1] views of [1, L] tensors with equal keys. The second is not the loop's next step, so
    # each step is one graph (one launch), and every length of the bucket reuses its program.
    def step(tokens, positions):
        last = tokens[:, -1:].clone()
        pos = positions[:, -1:].clone()
        nxt = (last * 7 + pos * 3) % 1000
        return torch.cat([tokens, nxt], dim=1), torch.cat([positions, pos + 1], dim=1)

    tokens, positions = torch.tensor([[5, 9, 2]]), torch.tensor([[0, 1, 2]])
    for _ in range(12):
        tokens, positions = step(tokens, positions)
    with torch_tpu.eager_mode("fused"):
        t, p = torch.tensor([[5, 9, 2]], device="tpu"), torch.tensor([[0, 1, 2]], device="tpu")
        for _ in range(4):
            t, p = step(t, p)
            torch_tpu.sync()
        before = torch_tpu.metrics.counters()
        for _ in range(8):
            t, p = step(t, p)
            torch_tpu.sync()
        after = torch_tpu.metrics.counters()
    assert after["executions"] - before["executions"] == 8
    assert after["compiles"] == before["compiles"]
    for got, want in ((t, tokens), (p, positions)):
        assert got.device.type == "tpu" and got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got.cpu(), want)


def test_graph_size_limit_cuts_graphs():
    with torch_tpu.eager_mode("fused"):
        torch_tpu._C._set_max_graph_nodes(4)
        try:
            x = torch.zeros(3, device="tpu")
            for _ in range(10):
                x = x + 1
            assert torch_tpu._C._graph_size() <= 4
            assert torch.equal(x.cpu(), torch.full((3,), 10.0))
        finally:
            torch_tpu._C._set_max_graph_nodes(4096)


def test_fused_graph_programs_persist_across_processes(tmp_path):
    code = (
        "import torch, torch_tpu\n"
        "x = torch.arange(6.0, device='tpu')\n"
        "print(((x * 2 + 1).relu().sum()).item(), torch_tpu.metrics.counters()['compiles'])\n"
    )
    env = {
        **__import__("os").environ,
        "TORCH_TPU_CACHE_DIR": str(tmp_path),
        "TORCH_TPU_EAGER_MODE": "fused",
    }
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
        )
        for _ in range(2)
    ]
    (v1, c1), (v2, c2) = (r.stdout.split() for r in runs)
    assert v1 == v2 == "36.0"
    assert int(c1) > 0 and int(c2) == 0, (runs[0].stderr, runs[1].stderr)


def test_fused_execution_error_names_the_op_and_source_line():
    x = torch.arange(5.0, device="tpu")
    with torch_tpu.eager_mode("fused"):
        y = torch.index_select(x, 0, torch.tensor([1, 7], device="tpu"))  # the failing line
        line = sys._getframe().f_lineno - 1
        with pytest.raises(IndexError) as info:
            y.cpu()
    message = str(info.value)
    assert "aten::index_select" in message
    assert f"test_fused_mode.py:{line}" in message
    assert torch.equal(x.cpu(), torch.arange(5.0))  # the process stays usable


def donated():
    return torch_tpu.metrics.counters()["donated_buffers"]


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_in_place_updates_donate_old_buffers_and_earlier_reads_keep_old_values(mode):
    def run(x):
        y = x * 1  # reads the old value (in fused mode: inside the same program)
        x.add_(1)
        x[1:3] = 7.0  # a partial write updates the storage in place too
        return x, y, x + y

    with torch_tpu.eager_mode(mode):
        x = torch.arange(6.0, device="tpu")
        torch_tpu.sync()  # x now holds a buffer of its own
        before = donated()
        results = run(x)
        torch_tpu.sync()
        assert donated() > before
        for t, c in zip(results, run(torch.arange(6.0))):
            assert torch.equal(t.cpu(), c)


def test_fused_training_step_donates_parameters_and_optimizer_state():
    torch.manual_seed(0)
    model = GPT(layers=2, width=64).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 256, (4, 16))
    x, y = idx.to("tpu"), torch.roll(idx, -1, 1).to("tpu")
    per_step = []
    with torch_tpu.eager_mode("fused"):
        for _ in range(3):
            before = donated()
            loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()
            per_step.append(donated() - before)
    # From the second step on (the state exists), every parameter, exp_avg and exp_avg_sq
    # buffer is reused for its own update.
    assert per_step[1:] == [3 * len(list(model.parameters()))] * 2, per_step
