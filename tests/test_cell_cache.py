"""The cell cache: a damaged entry is rebuilt, never read; untrusted torch files are refused."""
import json
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from emergence.common.io import atomic_dir
from emergence.common.torch_files import UntrustedFileError, torch_load, torch_save
from emergence.runs import build_log
from emergence.runs import cache
from emergence.runs.cache import BUILD_RECORD, MANIFEST, cached


def _builder(calls):
    def build(folder):
        calls.append(folder)
        (folder / "results.nc").write_bytes(b"x" * 1000)
        (folder / "sub").mkdir()
        (folder / "sub" / "a.pt").write_bytes(b"y" * 10)
    return build


def test_entry_is_built_once_and_checksummed(tmp_path):
    calls = []
    entry = cached(tmp_path, "t", {"a": 1}, _builder(calls))
    assert cached(tmp_path, "t", {"a": 1}, _builder(calls)) == entry and len(calls) == 1
    manifest = json.loads((entry / MANIFEST).read_text())
    assert sorted(manifest) == [BUILD_RECORD, "results.nc", "sub/a.pt"]
    assert cached(tmp_path, "t", {"a": 2}, _builder(calls)) != entry and len(calls) == 2


def test_only_builds_whose_bytes_ignore_the_thread_count_share_the_cores(tmp_path, monkeypatch):
    shared = []

    @contextmanager
    def sharing_cores():
        shared.append(True)
        yield 1

    monkeypatch.setattr(cache, "sharing_cores", sharing_cores)
    float32 = {"device": "cpu", "precision": "float32"}
    cached(tmp_path, "t", {"runs_on": float32}, _builder([]))
    assert shared == [True]
    cached(tmp_path, "t", {"runs_on": dict(float32, precision="bf16-autocast", threads=2)}, _builder([]))  # keyed by them
    cached(tmp_path, "t", {"runs_on": dict(float32, device="cuda")}, _builder([]))
    assert shared == [True]


def test_lookups_report_what_the_cells_cost_to_build(tmp_path, monkeypatch):
    monkeypatch.setattr(build_log, "LOOKUPS", [])
    monkeypatch.setattr(build_log, "POOLS", [])
    monkeypatch.setattr(build_log, "COLD_WORKERS", [])
    clock = iter([100.0, 112.5])  # the build takes 12.5 s on this clock
    monkeypatch.setattr(cache.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(cache, "cpu_model", lambda: "Some CPU")
    entry = cached(tmp_path, "t", {"a": 1}, _builder([]))
    assert json.loads((entry / BUILD_RECORD).read_text()) == {"seconds": 12.5, "cpu": "Some CPU"}
    cached(tmp_path, "t", {"a": 1}, _builder([]))  # a second lookup of an entry built here: still built once
    usage = build_log.usage()
    assert usage.pop("entries") == {entry.name: 12.5}
    assert usage.pop("cpus") == {entry.name: "Some CPU"}
    assert usage == {"cells_built": 1, "cells_reused": 0, "built_seconds": 12.5, "reused_build_seconds": 0.0,
                     "build_wall_seconds": 12.5, "workers": 1}
    monkeypatch.setattr(build_log, "LOOKUPS", [])  # the next stage, on another machine, finds it built
    monkeypatch.setattr(cache, "cpu_model", lambda: "Another CPU")
    cached(tmp_path, "t", {"a": 1}, _builder([]))
    assert build_log.usage()["cells_reused"] == 1 and build_log.usage()["reused_build_seconds"] == 12.5
    assert build_log.usage()["cpus"] == {entry.name: "Some CPU"}  # where it was built, not where it is read
    (entry / BUILD_RECORD).unlink()  # an entry from before the record: its cost is unknown, not 0
    manifest = json.loads((entry / MANIFEST).read_text())
    del manifest[BUILD_RECORD]
    (entry / MANIFEST).write_text(json.dumps(manifest))
    cached(tmp_path, "t", {"a": 1}, _builder([]))
    assert build_log.usage()["reused_build_seconds"] is None and build_log.usage()["cpus"] == {entry.name: None}


@pytest.mark.parametrize("damage", [
    lambda e: (e / "results.nc").write_bytes(b"x" * 500),          # truncated by a kill mid-copy
    lambda e: (e / "sub" / "a.pt").write_bytes(b"z" * 10),          # corrupted, same size
    lambda e: (e / "sub" / "a.pt").unlink(),                        # a file gone
    lambda e: (e / MANIFEST).unlink(),                              # never finished
])
def test_damaged_entry_is_rebuilt_not_read(tmp_path, damage):
    calls = []
    entry = cached(tmp_path, "t", {"a": 1}, _builder(calls))
    damage(entry)
    assert cached(tmp_path, "t", {"a": 1}, _builder(calls)) == entry and len(calls) == 2
    assert (entry / "results.nc").read_bytes() == b"x" * 1000


def test_failed_build_leaves_no_entry(tmp_path):
    def broken(folder):
        (folder / "results.nc").write_bytes(b"half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        cached(tmp_path, "t", {"a": 1}, broken)
    assert not any((tmp_path / "cells").iterdir())


def test_atomic_dir_keeps_the_old_folder_on_failure(tmp_path):
    out = tmp_path / "out"
    with atomic_dir(out) as tmp:
        (tmp / "a").write_text("1")
    with pytest.raises(ValueError), atomic_dir(out) as tmp:
        (tmp / "b").write_text("2")
        raise ValueError
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and [p.name for p in out.iterdir()] == ["a"]


class Payload:  # anything beyond tensors and plain containers
    pass


def test_torch_files_with_pickled_objects_are_refused(tmp_path):
    torch_save({"step": 3, "state_dict": {"w": torch.ones(2)}, "seeds": [0, 1]}, tmp_path / "ok.pt")
    assert torch_load(tmp_path / "ok.pt")["step"] == 3
    torch.save({"step": 3, "evil": Payload()}, tmp_path / "bad.pt")
    with pytest.raises(UntrustedFileError, match="bad.pt: refused"):
        torch_load(tmp_path / "bad.pt")


def test_a_read_only_lookup_never_builds_and_refuses_a_damaged_entry(tmp_path, monkeypatch):
    monkeypatch.setattr(build_log, "LOOKUPS", [])
    assert cache.intact_entry(tmp_path, "t", {"a": 1}) is None
    assert not (tmp_path / "cells").exists() and build_log.LOOKUPS == []  # nothing built, nothing tallied
    entry = cached(tmp_path, "t", {"a": 1}, _builder([]))
    assert cache.intact_entry(tmp_path, "t", {"a": 1}) == entry
    (entry / "results.nc").write_bytes(b"x" * 999)  # truncated
    assert cache.intact_entry(tmp_path, "t", {"a": 1}) is None
    assert (entry / "results.nc").exists()  # a read-only lookup deletes nothing either


def test_a_cell_is_read_from_the_cache_without_training(tmp_path):
    from emergence.pipeline.config import load_params
    from emergence.runs import cells

    params = load_params(profile="smoke")
    section = params["linear_map"]
    section["train"].update(n_seeds=1, seeds_per_group=1, steps=4, eval_every=2, checkpoint_every=4)
    cell = cells.Setting.of(params).linear_map
    assert cells.cached_cell(cell, tmp_path) is None and not (tmp_path / "cells").exists()
    trained = cells.trained_cell(cell, tmp_path)
    assert cells.cached_cell(cell, tmp_path) == trained and (trained / cells.RESULTS).is_file()
    assert cells.cached_cell(cell, tmp_path, with_checkpoints=True) is None  # another entry


def test_a_second_builder_of_an_entry_waits_for_the_first_and_reads_its_build(tmp_path):
    """Processes sharing one cache (queued experiments, clones on a cluster): while one builds
    an entry the other waits on its lock, then reads it; the build runs once."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    started, release = ctx.Event(), ctx.Event()
    first = ctx.Process(target=_slow_build, args=(tmp_path, started, release))
    first.start()
    assert started.wait(60)
    builds = []

    def build(folder):
        builds.append(folder)
        (folder / "x.txt").write_text("second")

    import threading
    result = {}
    waiter = threading.Thread(target=lambda: result.setdefault("entry", cached(tmp_path, "c", {"k": 1}, build)))
    waiter.start()
    waiter.join(1.0)
    assert waiter.is_alive()  # waiting on the first builder's lock, not building beside it
    release.set()
    first.join(60)
    waiter.join(60)
    assert first.exitcode == 0 and not builds
    assert (result["entry"] / "x.txt").read_text() == "first"


def _slow_build(scratch, started, release):
    def build(folder):
        started.set()
        assert release.wait(60)
        (folder / "x.txt").write_text("first")
    cached(scratch, "c", {"k": 1}, build)


def test_the_cache_lives_where_every_experiment_of_the_repository_finds_it(tmp_path):
    """DVC runs a queued or --temp experiment in a copy under .dvc/tmp/exps/ and names the
    repository that queued it in $DVC_ROOT: the stage's cache is that repository's. A setting
    ($EMERGENCE_SCRATCH) moves it anywhere, relative to the repository."""
    from emergence.pipeline.stage import scratch_dir

    repo = tmp_path / "repo"
    copy = repo / ".dvc" / "tmp" / "exps" / "tmp1234"
    assert scratch_dir({}, repo) == (repo / "data" / ".scratch").resolve()
    assert scratch_dir({"DVC_ROOT": str(repo)}, copy) == (repo / "data" / ".scratch").resolve()
    assert scratch_dir({"DVC_ROOT": str(repo), "EMERGENCE_SCRATCH": "/shared/cells"}, copy) == Path("/shared/cells")
    assert scratch_dir({"EMERGENCE_SCRATCH": "../cells"}, repo) == (tmp_path / "cells").resolve()


def test_a_cache_that_cannot_be_written_stops_naming_the_setting(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with pytest.raises(SystemExit, match="EMERGENCE_SCRATCH"):
        cached(blocked / "scratch", "c", {"k": 1}, lambda folder: None)
