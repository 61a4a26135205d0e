"""The linear map itself (claims 1 and 2): one cell, every seed of `linear_map.train`, with
checkpoints (the attention maps and the patching read them)."""
from __future__ import annotations

from emergence.runs.cells import Cell, Setting


def planned_cells(setting: Setting, section: dict, name: str = "linear_map") -> list[tuple[Cell, bool]]:
    return [(setting.linear_map, True)]
