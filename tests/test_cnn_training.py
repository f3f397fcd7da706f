"""A small CNN (conv-bn-relu-pool ... linear) trained on tpu matches the same run on CPU:
losses, parameters and batch-norm running stats; a second epoch compiles nothing."""

import copy

import pytest
import torch
import torch.nn.functional as F

import torch_tpu


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, groups=2, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.up = torch.nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.fc = torch.nn.Linear(8 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.avg_pool2d(self.up(x), 2, ceil_mode=True)
        x = F.adaptive_avg_pool2d(x, 2)
        return self.fc(x.flatten(1))


def train(model, batches, device, epochs):
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    losses, compiles = [], []
    for _ in range(epochs):
        before = torch_tpu.metrics.counters()["compiles"]
        for x, y in batches:
            loss = F.cross_entropy(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        compiles.append(torch_tpu.metrics.counters()["compiles"] - before)
    return model, losses, compiles


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_cnn_with_batch_norm_matches_cpu(mode):
    torch.manual_seed(0)
    batches = [(torch.randn(6, 3, 12, 12), torch.randint(0, 10, (6,))) for _ in range(3)]
    model = CNN()
    with torch_tpu.eager_mode(mode):
        m_tpu, l_tpu, compiles = train(copy.deepcopy(model), batches, "tpu", epochs=2)
    m_cpu, l_cpu, _ = train(model, batches, "cpu", epochs=2)
    atol = 1e-4
    assert l_tpu == pytest.approx(l_cpu, abs=atol, rel=atol)
    for (n, t_cpu), (_, t_tpu) in zip(m_cpu.state_dict().items(), m_tpu.state_dict().items()):
        assert t_tpu.device.type == "tpu"
        torch.testing.assert_close(t_tpu.cpu(), t_cpu, atol=atol, rtol=atol, msg=n)
    assert l_tpu[3] < l_tpu[0]  # the same batch, one epoch later
    assert compiles[1] == 0, compiles
    # Evaluation uses the running stats.
    m_cpu.eval()
    m_tpu.eval()
    x = torch.randn(4, 3, 12, 12)
    torch.testing.assert_close(m_tpu(x.to("tpu")).cpu(), m_cpu(x), atol=atol, rtol=atol)
