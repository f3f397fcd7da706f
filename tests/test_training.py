"""Real models trained on tpu match the same run on CPU; a second epoch compiles nothing."""

import copy

import pytest
import torch
import torch.nn.functional as F
from models import GPT, MLP

import torch_tpu


def train(model, batches, device, steps_per_epoch, epochs, lr=1e-3):
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))  # lr changes every step
    losses, compiles_per_epoch = [], []
    for _ in range(epochs):
        before = torch_tpu.metrics.counters()["compiles"]
        for x, y in batches[:steps_per_epoch]:
            x, y = x.to(device), y.to(device)
            loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        compiles_per_epoch.append(torch_tpu.metrics.counters()["compiles"] - before)
    return model, losses, compiles_per_epoch


class LossWrapper(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)


def compare(model_cpu, batches, steps, epochs, atol):
    model_tpu = copy.deepcopy(model_cpu)
    m_cpu, l_cpu, _ = train(model_cpu, batches, "cpu", steps, epochs)
    m_tpu, l_tpu, compiles = train(model_tpu, batches, "tpu", steps, epochs)
    assert l_tpu == pytest.approx(l_cpu, abs=atol, rel=atol)
    for (n, p_cpu), (_, p_tpu) in zip(m_cpu.named_parameters(), m_tpu.named_parameters()):
        assert p_tpu.device.type == "tpu"
        torch.testing.assert_close(
            p_tpu.detach().cpu(), p_cpu.detach(), atol=atol, rtol=atol, msg=n
        )
    assert l_tpu[steps] < l_tpu[0]  # the same batch, one epoch later
    return compiles


def test_mlp_adamw_matches_cpu_and_second_epoch_compiles_nothing():
    torch.manual_seed(0)
    batches = [(torch.randn(16, 32), torch.randint(0, 10, (16,))) for _ in range(4)]
    compiles = compare(LossWrapper(MLP()), batches, steps=4, epochs=2, atol=1e-4)
    assert compiles[1] == 0, compiles


def test_small_gpt_adamw_matches_cpu_and_second_epoch_compiles_nothing():
    torch.manual_seed(0)
    batches = []
    for _ in range(3):
        idx = torch.randint(0, 256, (4, 32))
        batches.append((idx, torch.roll(idx, -1, dims=1)))
    compiles = compare(GPT(), batches, steps=3, epochs=2, atol=2e-4)
    assert compiles[1] == 0, compiles
