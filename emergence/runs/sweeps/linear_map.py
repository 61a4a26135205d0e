"""The linear map itself (claims 1 and 2): one cell, every seed of `linear_map.train`, with
checkpoints (the attention maps and the patching read them)."""
from __future__ import annotations


def planned_cells(params: dict, name: str = "linear_map") -> list[tuple[dict, bool]]:
    return [({"profile": params["profile"], "linear_map": params["linear_map"]}, True)]
