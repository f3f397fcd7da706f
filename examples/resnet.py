"""ResNet: torchvision's resnet18 / resnet50 architecture (written here: torchvision's wheels do
not load against the pinned torch) trained on synthetic CIFAR-sized images.

    python examples/resnet.py [--arch resnet18|resnet50] [--mode strict|fused|compile] [--steps 20] [--dtype f32|bf16]
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from common import Workload, main

CLASSES, BATCH, SIZE = 10, 16, 32


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, width, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)

    def residual(self, x):
        return self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(
            width, width, 3, stride, 1, bias=False
        )  # stride on the 3x3, as torchvision
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(width * 4)

    def residual(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.bn3(self.conv3(x))


class Residual(nn.Module):
    """A block and its shortcut (a strided 1x1 projection where the shape changes)."""

    def __init__(self, block, cin, width, stride):
        super().__init__()
        self.body = block(cin, width, stride)
        cout = width * block.expansion
        self.shortcut = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x):
        return F.relu(self.body.residual(x) + self.shortcut(x))


class ResNet(nn.Module):
    LAYOUTS = {"resnet18": (BasicBlock, (2, 2, 2, 2)), "resnet50": (Bottleneck, (3, 4, 6, 3))}

    def __init__(self, arch="resnet18", classes=CLASSES):
        super().__init__()
        block, depths = self.LAYOUTS[arch]
        # The ImageNet stem (7x7 stride 2 and a max pool), as torchvision builds it.
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        layers, cin = [], 64
        for stage, depth in enumerate(depths):
            width = 64 * 2**stage
            for i in range(depth):
                layers.append(Residual(block, cin, width, 2 if i == 0 and stage > 0 else 1))
                cin = width * block.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def workload(args):
    # Each class is a fixed random pattern; images are noisy copies, so the classes are learnable.
    patterns = torch.randn(
        CLASSES, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(args.seed)
    )
    generator = torch.Generator().manual_seed(args.seed + 1)

    def batch(step):
        labels = torch.randint(0, CLASSES, (BATCH,), generator=generator)
        images = patterns[labels] + 0.8 * torch.randn(BATCH, 3, SIZE, SIZE, generator=generator)
        return images, labels

    def loss(model, images, labels):
        return F.cross_entropy(model(images).float(), labels)

    return Workload(ResNet(args.arch), batch, loss, items=BATCH, unit="images", lr=1e-3)


def add_flags(p):
    p.add_argument("--arch", choices=tuple(ResNet.LAYOUTS), default="resnet18")


if __name__ == "__main__":
    main("ResNet", workload, __doc__, steps=20, add_flags=add_flags)
