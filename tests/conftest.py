import os

import pytest
import torch

os.environ.setdefault("DVC_NO_ANALYTICS", "1")
torch.set_num_threads(1)


@pytest.fixture
def tiny_cfg():
    from emergence.model import ModelConfig

    return ModelConfig(vocab_size=2, seq_len=10, n_layer=2, d_model=16, n_head=4, d_mlp=32)


def pytest_collection_modifyitems(items):
    """The smoke pipeline first: it is the longest file, so under pytest-xdist the unit tests
    fill the other workers while it runs instead of after it (stable, so every worker agrees)."""
    items.sort(key=lambda item: 0 if item.get_closest_marker("pipeline") else 1)
