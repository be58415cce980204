"""What the stage-2 tests share: the two tracers side by side."""

from __future__ import annotations

import torch.fx

import minifx.graph

TRACERS = {"minifx": minifx.graph.Tracer, "torch.fx": torch.fx.Tracer}
