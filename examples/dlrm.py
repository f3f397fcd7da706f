"""DLRM: a deep learning recommendation model (bottom MLP, embedding bags, dot interaction, top
MLP) learns click-through from synthetic impressions whose clicks follow a hidden rule.

python examples/dlrm.py [--mode strict|fused|compile] [--steps 300] [--dtype f32|bf16]
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from common import Workload, eager_mode, main

DENSE, TABLES, ROWS, BAG, DIM, BATCH = 13, 8, 1000, 4, 16, 512


def mlp(*widths, last_relu=True):
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*(layers if last_relu else layers[:-1]))


class DLRM(nn.Module):
    def __init__(self):
        super().__init__()
        self.bottom = mlp(DENSE, 64, DIM)
        # Row 0 pads the bags: every bag has BAG slots, so each step has one shape, while a
        # bag's items are 1 to BAG (padding rows add nothing and get no gradient).
        self.tables = nn.ModuleList(
            nn.EmbeddingBag(ROWS, DIM, mode="sum", padding_idx=0) for _ in range(TABLES)
        )
        for table in self.tables:
            # Rows of N(0, 1), the default, give dot products of about 4 (sums of DIM products)
            # at the start: noise that swamps the top MLP. Scaling keeps the padding row zero.
            table.weight.data.mul_(0.1)
        features = TABLES + 1
        pairs = torch.triu_indices(features, features, offset=1)
        self.register_buffer("pairs", pairs[0] * features + pairs[1], persistent=False)
        self.top = mlp(DIM + len(self.pairs), 64, 32, 1, last_relu=False)

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        vectors = torch.stack([x] + [table(sparse[:, i]) for i, table in enumerate(self.tables)], 1)
        # Every pair of distinct features once: the strict upper triangle of the Gram matrix.
        dots = torch.bmm(vectors, vectors.transpose(1, 2)).flatten(1)[:, self.pairs]
        return self.top(torch.cat([x, dots], 1)).squeeze(1)


class Clicks:
    """Impressions and the hidden rule behind their clicks: a linear effect of the dense
    features, a per-item effect in every table, and an interaction between the items of the
    first two tables (what the dot products are there to find). Item popularity is skewed, as in
    real logs, so the popular items are seen often enough to be learned."""

    def __init__(self, seed):
        g = torch.Generator().manual_seed(seed)
        self.weights = torch.randn(DENSE, generator=g) / DENSE**0.5
        self.effects = torch.randn(TABLES, ROWS, generator=g) * 0.5
        self.effects[:, 0] = 0  # padding
        self.factors = torch.randn(2, ROWS, 4, generator=g) * 0.6
        self.factors[:, 0] = 0

    def sample(self, n, g):
        dense = torch.randn(n, DENSE, generator=g)
        popularity = torch.rand(n, TABLES, BAG, generator=g) ** 3
        sparse = 1 + (popularity * (ROWS - 1)).long()
        # Bags of 1 to BAG items: the slots past a bag's length hold the padding row.
        length = torch.randint(1, BAG + 1, (n, TABLES, 1), generator=g)
        sparse = sparse.masked_fill(torch.arange(BAG) >= length, 0)
        logit = 1.5 * self.logit(dense, sparse)
        clicks = torch.bernoulli(torch.sigmoid(logit), generator=g)
        return dense, sparse, clicks, logit

    def logit(self, dense, sparse):
        items = self.effects[torch.arange(TABLES)[:, None], sparse].sum((1, 2))
        u, v = (self.factors[i][sparse[:, i]].sum(1) for i in range(2))
        return dense @ self.weights + items + (u * v).sum(1) - 0.5


def auc(scores, labels):
    """The chance that a random click scores above a random non-click (ranks; ties are rare
    for float scores)."""
    ranks = torch.empty(len(scores)).index_put_(
        (scores.argsort(),), torch.arange(1.0, len(scores) + 1)
    )
    positives = labels.bool()
    p, n = positives.sum(), (~positives).sum()
    return ((ranks[positives].sum() - p * (p + 1) / 2) / (p * n)).item()


@torch.no_grad()
def predict(model, dense, sparse, mode, dtype):
    """Logits for CPU inputs, scored in one batch."""
    model.eval()
    device = next(model.parameters()).device
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype == "bf16")
    with eager_mode(mode, device), autocast:
        return model(dense.to(device), sparse.to(device)).float().cpu()


def workload(args):
    clicks = Clicks(args.seed)
    generator = torch.Generator().manual_seed(args.seed + 1)

    def batch(step):
        return clicks.sample(BATCH, generator)[:3]

    def loss(model, dense, sparse, labels):
        return F.binary_cross_entropy_with_logits(model(dense, sparse).float(), labels)

    w = Workload(DLRM(), batch, loss, items=BATCH, unit="samples", lr=1e-2)
    w.clicks = clicks
    return w


if __name__ == "__main__":
    args, w, result = main("DLRM", workload, __doc__, steps=300)
    dense, sparse, labels, logit = w.clicks.sample(
        16 * BATCH, torch.Generator().manual_seed(args.seed + 2)
    )
    scores = predict(w.model, dense, sparse, args.mode, args.dtype)
    print(
        f"held-out {len(labels)} impressions, {labels.mean():.1%} clicked: "
        f"accuracy {((scores > 0) == labels).float().mean():.1%}, AUC {auc(scores, labels):.3f} "
        f"(the hidden rule itself: {((logit > 0) == labels).float().mean():.1%}, "
        f"AUC {auc(logit, labels):.3f})"
    )
