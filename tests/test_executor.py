"""Cells built by parallel workers: the same bytes as one process, threads within the cores."""
import copy
import hashlib
import os
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

from emergence.pipeline.config import load_params
from emergence.runs import build_log, executor
from emergence.runs import cache, cells
from emergence.runs.executor import Plan, plan, run_jobs, worker_start_seconds

import typed_params as typed

SMOKE = load_params(profile="smoke")


def execution(**settings):
    """The smoke profile's `execution`, with `settings`."""
    return replace(typed.execution(SMOKE), **settings)


def train_args(**settings):
    """The smoke linear map's `train` section, with `settings`."""
    return replace(typed.setting(SMOKE).linear_map.train, **settings)


SERIAL = execution(executor="local", workers=1, threads_per_worker=1, slowdown=1.0, worker_start_s=0.0)
POOLED = execution(executor="local", workers=2, threads_per_worker=1, slowdown=1.0, worker_start_s=0.0)


def test_threads_never_exceed_the_cores(monkeypatch):
    monkeypatch.setattr(executor, "usable_cores", lambda: 16)
    auto = execution(executor="local", workers=0, threads_per_worker=4, slowdown=1.0, worker_start_s=0.0)
    assert plan(auto, [1.0] * 10) == Plan(4, 4)
    assert plan(replace(auto, workers=8), [1.0] * 10) == Plan(4, 4)       # 8 x 4 threads would be 32 on 16 cores
    one = replace(auto, threads_per_worker=1)
    assert plan(one, [1.0] * 20) == Plan(16, 1)
    assert plan(one, [1.0] * 3) == Plan(3, 5)  # no more workers than entries, the spare cores their threads
    assert plan(replace(one, workers=3), [1.0] * 3) == Plan(3, 1)  # unless `workers` is set
    assert plan(auto, [1.0] * 10, cell_threads=8) == Plan(2, 8)        # the cells' own train.threads win
    assert plan(auto, [1.0]).workers == 1 and plan(auto, [1.0] * 10, device="cuda").workers == 1
    assert plan(auto, [1.0] * 10, bound_here=True).workers == 1  # CPU bfloat16: keys record the threads
    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    assert plan(replace(auto, threads_per_worker=2), [1.0] * 10).workers == 1  # one worker: this process builds


def test_on_cuda_one_worker_per_gpu_with_a_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(executor, "usable_cores", lambda: 16)
    monkeypatch.setattr(executor, "visible_gpus", lambda: ["0", "1", "2", "3"])
    auto = execution(executor="local", workers=0, threads_per_worker=1, slowdown=1.66, worker_start_s=0.0)
    assert plan(auto, [1.0] * 10, device="cuda") == Plan(4, 4, "cuda")
    assert plan(auto, [1.0] * 3, device="cuda") == Plan(3, 5, "cuda")           # no more workers than entries
    assert plan(replace(auto, workers=2), [1.0] * 10, device="cuda") == Plan(2, 8, "cuda")
    assert plan(replace(auto, workers=8), [1.0] * 10, device="cuda").workers == 4  # never more than the GPUs
    # each worker has a GPU of its own: no CPU slowdown, so 4 cells on 2 GPUs take 2 s, not 3.3
    assert executor.expected_seconds(auto, [1.0] * 4, Plan(2, 8, "cuda")) == 2.0
    monkeypatch.setattr(executor, "visible_gpus", lambda: ["0"])
    assert plan(auto, [1.0] * 10, device="cuda").workers == 1                   # one GPU: this process


def test_the_visible_gpus_are_the_ones_cuda_visible_devices_names(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 5,GPU-8f3a")
    assert executor.visible_gpus() == ["2", "5", "GPU-8f3a"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert executor.visible_gpus() == []
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert executor.visible_gpus() == ["0", "1"]


def _worker_gpu(seconds: float) -> tuple[int, str]:
    import time
    time.sleep(seconds)
    return os.getpid(), os.environ.get("CUDA_VISIBLE_DEVICES", "")


def test_each_cuda_worker_sees_one_gpu_of_its_own(monkeypatch):
    """Spawned workers (no CUDA is touched): each takes one of the visible GPUs before its first
    job, and no two workers share one."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,7")
    seen = run_jobs(_worker_gpu, [(0.5,)] * 4, Plan(2, 1, "cuda"))
    by_worker = dict(seen)
    assert set(by_worker.values()) <= {"3", "7"}
    assert len(set(by_worker.values())) == len(by_worker)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3,7"  # this process keeps its own


def test_workers_only_where_they_finish_sooner(monkeypatch):
    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    two = execution(executor="local", workers=0, threads_per_worker=1, slowdown=1.66, worker_start_s=0.0)
    assert plan(two, [1.0] * 8).workers == 2       # 4 rounds x 1.66 = 6.6 < 8
    assert plan(two, [1.0] * 3).workers == 1       # 2 rounds x 1.66 = 3.3 > 3
    assert plan(two, [10.0, 1.0, 1.0]).workers == 1  # the long cell alone takes 16.6 > 12
    # ...and sooner by more than the workers take to start: 8 cells of 1 s save 1.4 s
    assert plan(replace(two, worker_start_s=1.0), [1.0] * 8).workers == 2
    assert plan(replace(two, worker_start_s=4.0), [1.0] * 8).workers == 1
    assert plan(replace(two, worker_start_s=4.0), [100.0] * 8).workers == 2  # 800 s against 664
    assert executor.makespan([5.0, 4.0, 3.0, 3.0], 2) == 8.0
    # the wall time the plan expects (the printed plan's): {5, 3} and {4, 3} at 1.66 x, after a 4 s start
    started = replace(two, worker_start_s=4.0)
    assert executor.expected_seconds(started, [5.0, 4.0, 3.0, 3.0], Plan(2, 1)) == pytest.approx(8 * 1.66 + 4)
    assert executor.expected_seconds(started, [5.0, 4.0, 3.0, 3.0], Plan(1, 2)) == 15.0


def test_worker_start_up_is_timed_until_every_worker_has_imported_the_build_code():
    assert worker_start_seconds(Plan(1, 1), "emergence.common.schema") > 0
    with pytest.raises(ModuleNotFoundError):
        worker_start_seconds(Plan(1, 1), "emergence.no_such_module")


def test_a_build_takes_the_cores_other_builds_leave():
    assert executor.threads_beside(0, 16, 4) == 4    # alone: what it asks for
    assert executor.threads_beside(14, 16, 4) == 2   # two cores left
    assert executor.threads_beside(2, 2, 2) == 1     # none left: one thread, never none


def test_builds_that_died_hold_no_threads(tmp_path):
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(done.stdout)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / str(dead)).write_text("8")
        (tmp_path / str(alive.pid)).write_text("3")
        (tmp_path / str(os.getpid())).write_text("5")  # this process's own build is not another's
        (tmp_path / "not-a-pid").write_text("x")
        assert executor.held_threads(tmp_path, os.getpid()) == 3
        assert not (tmp_path / str(dead)).exists()
    finally:
        alive.kill()
        alive.wait()


def test_a_build_beside_another_runs_what_the_cores_leave_and_gives_them_back(tmp_path, monkeypatch):
    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with executor.sharing_cores(tmp_path) as alone:
            assert alone == 2 and (tmp_path / str(os.getpid())).read_text() == "2"
            with executor.sharing_cores(tmp_path) as inner:   # nested: the outer build holds them
                assert inner == 2
            assert (tmp_path / str(os.getpid())).exists()
        assert not (tmp_path / str(os.getpid())).exists()
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            (tmp_path / str(other.pid)).write_text("1")
            with executor.sharing_cores(tmp_path) as beside:
                assert beside == 1 and torch.get_num_threads() == 1
            assert torch.get_num_threads() == 2
            monkeypatch.setenv("SLURM_JOB_ID", "1")  # a SLURM task's cores are its own
            with executor.sharing_cores(tmp_path) as on_slurm:
                assert on_slurm == 2
            monkeypatch.delenv("SLURM_JOB_ID")
            (tmp_path / "file").write_text("")
            with executor.sharing_cores(tmp_path / "file" / "registry") as unwritable:  # builds unregistered
                assert unwritable == 2
        finally:
            other.kill()
            other.wait()
    finally:
        torch.set_num_threads(before)


def _square(x):
    if x < 0:
        raise ValueError(f"negative: {x}")
    return x * x


def test_jobs_come_back_in_order_and_a_failure_is_raised():
    assert run_jobs(_square, [(3,), (1,), (2,)], Plan(2, 1), costs=[1.0, 3.0, 2.0]) == [9, 1, 4]
    with pytest.raises(ValueError, match="negative: -1"):
        run_jobs(_square, [(1,), (-1,), (2,)], Plan(2, 1))


def _sweep_files(seeds_per_group: int = 1, device: str | None = None):
    """Three small linear-map cells of two seeds: two seed groups each (parts the executor may
    train apart), or one; on `device` where given (else the profile's)."""
    params = load_params(profile="smoke")
    budget = replace(typed.section(params, "sparsity"), n_seeds=2, steps=12, eval_every=4)
    files = []
    for s in (1, 2, 3):
        cell = cells.with_budget(typed.setting(params).linear_map, {"state_size": 4, "sparsity": s}, budget)
        train = replace(cell.train, seeds_per_group=seeds_per_group, **({"device": device} if device else {}))
        files.append(cells.SweepFile(f"s{s}", [replace(cell, train=train)]))
    return files


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.nc"))}


def test_a_sweep_built_by_two_workers_has_the_bytes_of_one_process(tmp_path, monkeypatch):
    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    monkeypatch.setattr(build_log, "LOOKUPS", [])
    monkeypatch.setattr(build_log, "POOLS", [])
    monkeypatch.setattr(build_log, "COLD_WORKERS", [])
    files = _sweep_files()
    cells.write_sweep(copy.deepcopy(files), tmp_path / "pooled", tmp_path / "scratch-pooled", POOLED)
    usage = build_log.usage()
    assert usage["cells_built"] == 3 and usage["cells_reused"] == 0 and usage["workers"] == 2
    cells.write_sweep(copy.deepcopy(files), tmp_path / "serial", tmp_path / "scratch-serial", SERIAL)
    assert _digests(tmp_path / "pooled") == _digests(tmp_path / "serial") and len(_digests(tmp_path / "serial")) == 3
    for log in ("LOOKUPS", "POOLS", "COLD_WORKERS"):
        monkeypatch.setattr(build_log, log, [])
    monkeypatch.setattr(build_log, "PIECES", {})
    cells.write_sweep(copy.deepcopy(files), tmp_path / "again", tmp_path / "scratch-pooled", POOLED)
    usage = build_log.usage()
    assert usage["cells_built"] == 0 and usage["cells_reused"] == 3  # a rerun builds nothing
    assert usage["workers"] == 2  # and records the workers a cold build would use, for the cold estimate


def test_entries_that_fix_their_threads_go_to_workers_even_where_threads_would_pay(monkeypatch):
    """This process would build them on their own few threads too, so a worker is no slower:
    one long entry and one short, which this process builds sooner with every thread, go to two
    one-thread workers when each fixes one thread, and the cost model expects what the plan does."""
    from emergence.pipeline.cost import build_wall
    from emergence.runs.cache import build_plan

    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    two = execution(executor="local", workers=0, threads_per_worker=1, slowdown=1.53, worker_start_s=3.0)
    loose, fixed = (train_args(threads=threads, device="cpu", precision="float32") for threads in (0, 1))
    assert build_plan(two, [loose, loose], [900.0, 300.0]).workers == 1       # 900 x 1.53 > 1,200
    assert build_plan(two, [fixed, fixed], [900.0, 300.0]) == Plan(2, 1)
    assert build_wall(two, [900.0, 300.0], [fixed, fixed], [(), ()]) == 903.0           # the longest, after the start
    assert build_plan(two, [fixed, loose], [900.0, 300.0]).workers == 1       # one would use every thread here
    assert build_plan(two, [fixed, fixed], [1.0, 1.0]).workers == 1           # the start costs more


def _no_training(*args, **kwargs):
    raise AssertionError("the cell's build trained a step: its seed groups were not found finished")


def _cell_files(entry):
    return {str(p.relative_to(entry)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(entry.rglob("*")) if p.is_file() and p.name not in cache.RECORDS}


@pytest.mark.parametrize("task, bias", [("linear_map", 0.0), ("linear_map", 3.0), ("cellular_automata", 0.0)])
def test_a_cell_trained_group_by_group_elsewhere_has_the_bytes_of_one_build(task, bias, tmp_path, monkeypatch):
    """Each seed group trained apart (as a worker or an array task does), the cell's build finds
    them finished and trains nothing, and writes the bytes of a cell built whole: results and
    merged checkpoints; its recorded build time counts the groups'."""
    from emergence.core import train

    params = load_params(profile="smoke")
    section = params[task]
    section["train"].update(n_seeds=3, seeds_per_group=2, steps=8, eval_every=4, checkpoint_every=4)
    section["bias"]["strength"] = bias  # the attention-bias intervention's hooks, training and evaluation
    cell = typed.setting(params).section(task)
    whole = cells.trained_cell(copy.deepcopy(cell), tmp_path / "whole", with_checkpoints=True)
    request = cells.cell_request(copy.deepcopy(cell), tmp_path / "split", with_checkpoints=True)
    assert [round(p.cost / request.cost, 3) for p in request.parts] == [0.667, 0.333]  # seeds [0, 1], [2]
    spent = sum(part.run() for part in request.parts)
    monkeypatch.setattr(train, "train_step", _no_training)
    split = cache.cached(tmp_path / "split", request.name, request.key, request.build)
    assert _cell_files(split) == _cell_files(whole) and any("checkpoints" in f for f in _cell_files(whole))
    # it counts the stored groups' training (not the set-up around it, which `spent` holds too)
    trained = sum(cache._build_record(g)["seconds"] for g in (tmp_path / "split" / "groups").glob(f"{task}-*"))
    assert spent >= trained > 0 and cache._build_record(split)["seconds"] >= trained - 0.01
    assert not list((tmp_path / "split").glob(f"{task}-*/group*"))  # the groups' scratch is cleared


def _counting_steps(monkeypatch) -> list:
    from emergence.core import train

    steps, step = [], train.train_step
    monkeypatch.setattr(train, "train_step", lambda *a, **k: steps.append(1) or step(*a, **k))
    return steps


def _small_cell(task: str, n_seeds: int, first_seed: int = 0) -> cells.Cell:
    params = load_params(profile="smoke")
    params[task]["train"].update(n_seeds=n_seeds, seeds_per_group=2, steps=8, eval_every=4, checkpoint_every=4,
                                 first_seed=first_seed)
    return typed.setting(params).section(task)


@pytest.mark.parametrize("task", ["linear_map", "cellular_automata"])
def test_a_cell_given_more_seeds_trains_only_the_seed_groups_it_adds(task, tmp_path, monkeypatch):
    """Seeds are an array axis, so a cell whose seed count grows keeps the groups it had: 4 -> 6
    seeds (groups of 2) trains one group, and the cell has the bytes of one built from nothing,
    merged checkpoints included; its recorded build time counts the stored groups' seconds, and
    the planner prices only the new group. A cell of seeds 2-3 alone trains nothing; one without
    checkpoints stores its groups without them."""
    four, six = _small_cell(task, 4), _small_cell(task, 6)
    cells.trained_cell(copy.deepcopy(four), tmp_path / "scratch", with_checkpoints=True)
    request = cells.cell_request(copy.deepcopy(six), tmp_path / "scratch", with_checkpoints=True)
    assert [p.stored for p in request.parts] == [True, True, False] and request.todo == pytest.approx(1 / 3)
    (left, left_parts), (cold, cold_parts) = request.pieces(), request.pieces(cold=True)
    assert [left, *left_parts] == pytest.approx([request.cost / 3] * 2)
    assert [cold, *cold_parts] == pytest.approx([request.cost] + [request.cost / 3] * 3)
    steps = _counting_steps(monkeypatch)
    grown = cells.trained_cell(copy.deepcopy(six), tmp_path / "scratch", with_checkpoints=True)
    assert len(steps) == 8  # one group's steps
    stored = sum(cache._build_record(cache.group_entry(tmp_path / "scratch", task, cells.group_key(six, g, True)))["seconds"]
                 for g in (0, 1))
    assert cache._build_record(grown)["seconds"] >= stored > 0
    whole = cells.trained_cell(copy.deepcopy(six), tmp_path / "cold", with_checkpoints=True)
    assert _cell_files(grown) == _cell_files(whole) and any("checkpoints" in f for f in _cell_files(whole))
    part = _small_cell(task, 2, first_seed=2)
    del steps[:]
    cells.trained_cell(copy.deepcopy(part), tmp_path / "scratch", with_checkpoints=True)
    assert steps == []
    cells.trained_cell(copy.deepcopy(part), tmp_path / "scratch")  # without checkpoints: a group of its own
    assert len(steps) == 8
    entry = cache.group_entry(tmp_path / "scratch", task, cells.group_key(part, 0))
    assert (entry / "state.pt").exists() and not (entry / "checkpoints").exists()


def test_a_damaged_stored_group_is_retrained_not_read(tmp_path, monkeypatch):
    four, six = _small_cell("linear_map", 4), _small_cell("linear_map", 6)
    cells.trained_cell(copy.deepcopy(four), tmp_path / "scratch")
    state = cache.group_entry(tmp_path / "scratch", "linear_map", cells.group_key(six, 1)) / "state.pt"
    state.write_bytes(state.read_bytes()[:-100])  # a kill during a copy, a full disk
    steps = _counting_steps(monkeypatch)
    grown = cells.trained_cell(copy.deepcopy(six), tmp_path / "scratch")
    assert len(steps) == 16  # the damaged group and the new one
    monkeypatch.undo()
    assert _cell_files(grown) == _cell_files(cells.trained_cell(copy.deepcopy(six), tmp_path / "cold"))


def test_cells_split_into_seed_groups_only_where_that_is_sooner(monkeypatch):
    """One eight-group cell on 16 cores goes out as its groups; two cores already busy with many
    cells, a CUDA device, or cells bound to this process stay whole. On SLURM, groups where
    there are fewer cells than array tasks."""
    from emergence.runs.cache import handout_seconds, pieces, splits

    f32 = train_args(threads=0, device="cpu", precision="float32")
    auto = execution(executor="local", workers=0, threads_per_worker=1, slowdown=1.5, worker_start_s=3.0)
    one_cell = [(800.0, (100.0,) * 8)]
    monkeypatch.setattr(executor, "usable_cores", lambda: 16)
    assert splits(auto, [f32], one_cell)
    assert handout_seconds(auto, [f32], pieces(one_cell)) == 100.0 * 1.5 + 3.0    # eight workers, one group each
    from emergence.pipeline.cost import build_wall
    assert build_wall(auto, [800.0], [f32], [(0.125,) * 8]) == 153.0               # the printed plan expects the same
    with monkeypatch.context() as on_gpu:  # where the device is a GPU, one process trains (no pool)
        on_gpu.setattr(cache, "runs_on", lambda train: {"device": "cuda", "precision": "float32"})
        assert not splits(auto, [f32], one_cell)
    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    many = [(400.0, (200.0, 200.0))] * 20
    assert not splits(auto, [f32] * 20, many)                                     # both workers busy either way
    assert splits(auto, [f32], [(400.0, (200.0, 200.0))])                         # one cell: 300 + 3 against 400
    bf16_loose = train_args(threads=0, device="cpu", precision="bf16-autocast")
    monkeypatch.setattr(cache, "bound_to_process", lambda train: train.precision != "float32")
    assert not splits(auto, [bf16_loose], [(400.0, (200.0, 200.0))])             # its key holds this process's threads
    slurm = replace(auto, executor="slurm", slurm=replace(auto.slurm, array_parallelism=64))
    assert splits(slurm, [f32] * 2, [(800.0, (100.0,) * 8)] * 2)                  # 16 tasks in place of 2
    assert not splits(slurm, [f32] * 64, [(800.0, (400.0, 400.0))] * 64)          # 64 cells fill the array
    assert not splits(auto, [f32], [(800.0, ())])                                  # one group: nothing to split


def test_a_sweep_split_into_seed_groups_on_two_workers_reruns_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    for log in ("LOOKUPS", "POOLS", "COLD_WORKERS"):
        monkeypatch.setattr(build_log, log, [])
    monkeypatch.setattr(build_log, "PIECES", {})
    files = _sweep_files()  # three cells, six groups: 3 rounds of groups on two workers against 2 of cells
    requests = [cells.cell_request(c, tmp_path / "scratch") for f in files for c in f.cells]
    assert cache.splits(POOLED, [c.train for f in files for c in f.cells],
                        [(r.cost, tuple(p.cost for p in r.parts)) for r in requests])
    cells.write_sweep(copy.deepcopy(files), tmp_path / "pooled", tmp_path / "scratch", POOLED)
    usage = build_log.usage()
    assert usage["cells_built"] == 3 and len(build_log.POOLS) == 1
    assert all(seconds > 0 for seconds in usage["entries"].values())
    assert usage["pieces"] == {name: 2 for name in usage["entries"]}  # for the entry page's cold estimate
    cells.write_sweep(copy.deepcopy(files), tmp_path / "whole", tmp_path / "scratch-whole", SERIAL)
    assert _digests(tmp_path / "pooled") == _digests(tmp_path / "whole")
    monkeypatch.setattr(build_log, "POOLS", [])
    cells.write_sweep(copy.deepcopy(files), tmp_path / "again", tmp_path / "scratch", POOLED)
    assert build_log.POOLS == []  # nothing missing: no pool started


def test_a_seed_group_killed_mid_run_resumes_and_the_cell_keeps_its_bytes(tmp_path, monkeypatch):
    """A group's task dies after a resume snapshot (a killed worker, a preempted array task):
    run again, it continues from the snapshot, and the assembled cell is the whole build's."""
    from emergence.core.train import FAULT_ENV, InjectedFault

    params = load_params(profile="smoke")
    section = params["linear_map"]
    section["train"].update(n_seeds=2, seeds_per_group=1, steps=12, eval_every=4, resume_every=4)
    cell = typed.setting(params).linear_map
    whole = cells.trained_cell(copy.deepcopy(cell), tmp_path / "whole")
    request = cells.cell_request(copy.deepcopy(cell), tmp_path / "split")
    monkeypatch.setenv(FAULT_ENV, "6")  # after the snapshot at step 4
    with pytest.raises(InjectedFault):
        request.parts[1].run()
    assert list((tmp_path / "split").glob("linear_map-*/group1/state.pt"))
    monkeypatch.delenv(FAULT_ENV)
    from emergence.core import train
    steps, step = [], train.train_step
    monkeypatch.setattr(train, "train_step", lambda *a, **k: steps.append(1) or step(*a, **k))
    request.parts[1].run()
    assert len(steps) == 12 - 4  # from the snapshot, not from the start
    request.parts[0].run()
    split = cache.cached(tmp_path / "split", request.name, request.key, request.build)
    assert _cell_files(split) == _cell_files(whole)
