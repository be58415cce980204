"""Whole models, written the way torchvision and common Transformer code write them.

Each is traced with minifx's and torch.fx's default Tracer; the printed graphs
must be identical, and minifx's graph must pass `lint()`.
"""

import math

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx.graph


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:  # a Python attribute: decided while tracing
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.inplanes = 16
        self.conv1 = nn.Conv2d(3, 16, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(16, 2)
        self.layer2 = self._make_layer(32, 2, stride=2)
        self.layer3 = self._make_layer(64, 2, stride=2)
        self.layer4 = self._make_layer(128, 2, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(128, num_classes)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


class SelfAttention(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attention = F.softmax(scores, dim=-1)
        out = (attention @ v).transpose(1, 2).reshape(batch, length, dim)
        return self.proj(out)


class EncoderBlock(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attention = SelfAttention(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = x + self.dropout(self.attention(self.norm1(x)))
        return x + self.dropout(self.mlp(self.norm2(x)))


class InvertedResidual(nn.Module):
    def __init__(self, channels: int, expand: int = 4):
        super().__init__()
        hidden = channels * expand
        self.block = nn.Sequential(
            nn.Conv2d(channels, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True), nn.Conv2d(hidden, channels, 1, bias=False), nn.BatchNorm2d(channels),
        )

    def forward(self, x):
        return x + self.block(x)


class MobileNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.Hardswish())
        self.blocks = nn.ModuleList([InvertedResidual(8) for _ in range(3)])
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean([2, 3]))


class WithTransformerEncoder(nn.Module):
    """torch.nn's own encoder is a leaf: one call_module node. (Tracing it as the root
    fails in torch.fx and minifx alike: its forward checks isinstance(mask, Tensor).)"""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 2)

    def forward(self, x):
        return self.head(self.encoder(x)[:, 0])


MODELS = {
    "resnet18": ResNet18,
    "encoder_block": EncoderBlock,
    "mobilenetish": MobileNetish,
    "transformer_encoder_leaf": WithTransformerEncoder,
}


@pytest.mark.parametrize("name", MODELS)
def test_model_prints_like_torch_fx(name):
    ours = minifx.graph.Tracer().trace(MODELS[name]())
    theirs = torch.fx.Tracer().trace(MODELS[name]())
    assert str(ours) == str(theirs)
    ours.lint()


def test_resnet18_has_the_expected_shape_of_graph():
    graph = minifx.graph.Tracer().trace(ResNet18())
    ops = [node.op for node in graph.nodes]
    # 20 convolutions, 20 batch norms, 4 downsample paths folded in, one fc.
    modules = [node.target for node in graph.nodes if node.op == "call_module"]
    assert sum(".conv" in m or m == "conv1" or m.endswith("downsample.0") for m in modules) == 20
    assert ops.count("placeholder") == 1 and ops[-1] == "output"
    assert "layer4_1_relu_1" in [node.name for node in graph.nodes]
