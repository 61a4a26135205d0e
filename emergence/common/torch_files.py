"""Torch files (checkpoints, resume state): written atomically, loaded trusting nothing but
tensors and plain types."""
from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import torch

from emergence.common.io import atomic_path


class UntrustedFileError(ValueError):
    """A torch file that holds more than tensors and plain types (unpickling it could run code)."""


def torch_save(obj: Any, path: Path | str) -> None:
    """Save tensors in plain containers (dict, list, int, float, str, None): what torch_load accepts."""
    with atomic_path(path, ".pt") as tmp:
        torch.save(obj, tmp)


def torch_load(path: Path | str, map_location: str | torch.device = "cpu") -> Any:
    """torch.load with weights_only=True: checkpoints and resume state may come from another
    machine (a DVC remote, a collaborator's cache), so nothing in them may run code."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        raise UntrustedFileError(f"{path}: refused, it holds objects other than tensors and plain types "
                                 f"(loaded with weights_only=True): {str(err).splitlines()[0]}") from None
