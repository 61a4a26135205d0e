import os

import pytest
import torch

import smoke_build

os.environ.setdefault("DVC_NO_ANALYTICS", "1")
torch.set_num_threads(1)


@pytest.fixture
def tiny_cfg():
    from emergence.core.model import ModelConfig

    return ModelConfig(vocab_size=2, seq_len=10, n_layer=2, d_model=16, n_head=4, d_mlp=32)


def pytest_collection_modifyitems(items):
    """Test files in this order: the one that reads the smoke build (its first test starts the
    build: minutes, while the other pytest-xdist workers run the unit tests), the unit tests,
    then the files that edit copies of the build, which the workers share at the end, the longest
    first (`--durations` orders them; a short file last keeps one worker from finishing alone). A
    stable sort, so every worker sends the same order (the scheduler keeps it: --no-loadscope-reorder)."""
    def rank(item):
        if not item.get_closest_marker("pipeline"):
            return 1, 0
        if "smoke_repo" not in item.fixturenames:
            return 0, 0
        name = item.path.name
        return 2, LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)


LONGEST_FIRST = ("test_pipeline_threshold.py", "test_pipeline_experiments.py", "test_pipeline_edits.py",
                 "test_extending.py", "test_pipeline_code_edit.py")


def pytest_sessionfinish(session):
    smoke_build.stop()  # an interrupted run leaves no build running behind it


@pytest.fixture(autouse=True)
def _yield_to_the_smoke_build(tmp_path_factory):
    """While the smoke build runs, the unit tests beside it run at a lower priority: the build
    is the run's longest chain (every file of pipeline tests waits for it), so the cores go to it
    first and the unit tests take what it leaves."""
    if smoke_build.running(smoke_build.run_folder(tmp_path_factory.getbasetemp())):
        smoke_build.lower_priority()


@pytest.fixture(scope="session")
def smoke_built(tmp_path_factory):
    """The repository after `dvc repro` on the smoke profile: read it, never edit it."""
    return smoke_build.wait(smoke_build.run_folder(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="module")
def smoke_repo(smoke_built, tmp_path_factory):
    """A copy of the smoke build of this test module's own, to edit and rerun."""
    return smoke_build.copy_of(smoke_built, tmp_path_factory.mktemp("smoke") / "repo")
