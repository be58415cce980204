"""What the stage-2 tests share: the two libraries and their tracers side by side."""

from __future__ import annotations

import torch.fx

import minifx
import minifx.graph

LIBRARIES = {"minifx": minifx, "torch.fx": torch.fx}

TRACERS = {"minifx": minifx.graph.Tracer, "torch.fx": torch.fx.Tracer}
