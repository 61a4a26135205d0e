"""`make report`'s prebuild: every cell the stages to run lack, in one pool, before `dvc repro`."""
import copy

from emergence.pipeline.config import load_params
from emergence.pipeline.cost import stage_entries
import torch

from emergence.core.precision import bf16_support
from emergence.pipeline.prebuild import pooled_requests
from emergence.runs.cache import bound_to_process, entry_of, thread_dependent
from emergence.runs.runner import runs_on

import typed_params as typed

HAS_BF16 = bf16_support(torch.device("cpu"))[0]


def _entries(requests, scratch):
    return {entry_of(scratch, request.name, request.key) for request, _ in requests}


def _planned_and_pooled(params, scratch):
    planned = {e: cost[4] for _, entries in stage_entries(params, scratch) for e, cost in entries.items()}
    return planned, _entries(pooled_requests(params, scratch), scratch)


def test_the_prebuild_asks_for_every_stages_cells_but_those_bound_to_their_stage(tmp_path):
    params = load_params(profile="smoke")
    planned, pooled = _planned_and_pooled(params, tmp_path)
    bf16 = {e for e, train in planned.items() if thread_dependent(runs_on(train))}
    assert pooled == set(planned) - {e for e, train in planned.items() if bound_to_process(train)}
    # the precision check's bfloat16 twins fix their threads (sweeps.precision.bf16_threads): pooled
    assert bf16 <= pooled and (bool(bf16) == HAS_BF16)
    # left to the process, the threads are this process's and in the key: the stage builds them
    loose = copy.deepcopy(params)
    loose["sweeps"]["precision"]["bf16_threads"] = 0
    planned, pooled = _planned_and_pooled(loose, tmp_path)
    bound = {e for e, train in planned.items() if bound_to_process(train)}
    assert bound == {e for e, train in planned.items() if thread_dependent(runs_on(train))}
    assert bool(bound) == HAS_BF16 and pooled == set(planned) - bound
    # a language model and the linear-map run, whose stage trains it on the task file, are among them
    names = {e.name.split("-")[0] for e in pooled}
    assert {"language_model", "linear_map", "cellular_automata"} <= names


def test_the_prebuild_asks_only_for_the_stages_dvc_will_run(tmp_path):
    params = load_params(profile="smoke")
    only = _entries(pooled_requests(params, tmp_path, {"sparsity@S08", "report_render"}), tmp_path)
    sparsity = dict(stage_entries(params, tmp_path, {"sparsity@S08"}))["sparsity"]
    assert only == set(sparsity) and only
    assert pooled_requests(params, tmp_path, set()) == []


def _pooled_and_alone(tmp_path, params: dict, stage: str, write) -> dict[str, tuple[bytes, int]]:
    """The bytes `write(params, scratch, folder)` writes (returning the file) and the entries it
    built itself: once after the prebuild's pool of two one-thread workers built `stage`'s
    cells (then it builds none), once alone in this process."""
    from emergence.pipeline.prebuild import prebuild
    from emergence.runs import build_log

    pool = copy.deepcopy(params)
    pool["execution"].update(worker_start_s=0.0, slowdown=1.0, workers=2)  # a pool, however short the cells
    out = {}
    for name, pooled in (("pooled", True), ("alone", False)):
        scratch = tmp_path / name / "scratch"
        del build_log.LOOKUPS[:], build_log.POOLS[:]
        if pooled:
            prebuild(pool, scratch, {stage})
            assert build_log.POOLS and build_log.POOLS[0]["workers"] == 2
            del build_log.LOOKUPS[:]
        path = write(params, scratch, tmp_path / name)
        out[name] = (path.read_bytes(), sum(u["built"] for u in build_log.LOOKUPS))
        assert pooled or not build_log.POOLS  # the smoke cells are seconds long: alone, the stage builds them here
    return out


def test_cells_the_pool_built_are_the_bytes_the_stage_would_have_built(tmp_path):
    """The prebuild's pool builds a sparsity row's cells; the stage's own code then builds
    nothing and writes the file it writes when it builds them itself."""
    from emergence.common.io import write_netcdf
    from emergence.runs.sweeps.sparsity import run_row

    def write(params, scratch, folder):
        setting = typed.setting(params)
        write_netcdf(run_row(setting, typed.section(params, "sparsity"), "S08", scratch, setting.execution),
                     folder / "row.nc")
        return folder / "row.nc"

    out = _pooled_and_alone(tmp_path, load_params(profile="smoke"), "sparsity@S08", write)
    assert out["pooled"][1] == 0 and out["alone"][1] > 0 and out["pooled"][0] == out["alone"][0]


def test_bfloat16_twins_with_fixed_threads_give_the_same_bytes_from_the_pool(tmp_path):
    """The precision check's cells, bfloat16 twin included (its threads fixed), built by the
    pool's workers and then by the stage alone in this process with all its threads: same file."""
    from emergence.runs.cells import write_sweep

    def write(params, scratch, folder):
        write_sweep(typed.files(params, "precision"), folder / "cells", scratch, typed.execution(params))
        return folder / "cells" / "linear_map.nc"

    params = load_params(profile="smoke")
    params["sweeps"]["precision"]["tasks"] = ["linear_map"]
    out = _pooled_and_alone(tmp_path, params, "precision", write)
    assert out["pooled"][1] == 0 and out["alone"][1] == 2 and out["pooled"][0] == out["alone"][0]


def test_bfloat16_twins_split_into_seed_groups_by_the_pool_give_the_stages_bytes(tmp_path, monkeypatch):
    """Four workers for two two-group cells: the pool trains their seed groups apart (the
    bfloat16 twin's on its fixed one thread), assembles the cells, and the stage alone writes
    the same file."""
    from emergence.pipeline.prebuild import prebuild
    from emergence.runs import build_log, executor
    from emergence.runs.cells import write_sweep

    monkeypatch.setattr(executor, "usable_cores", lambda: 4)
    monkeypatch.setattr(build_log, "PIECES", {})
    params = load_params(profile="smoke")
    params["sweeps"]["precision"]["tasks"] = ["linear_map"]
    params["linear_map"]["train"].update(n_seeds=4, seeds_per_group=2)
    pool = copy.deepcopy(params)
    pool["execution"].update(worker_start_s=0.0, slowdown=1.0, workers=4)
    files = {}
    for name in ("pooled", "alone"):
        scratch = tmp_path / name / "scratch"
        del build_log.LOOKUPS[:], build_log.POOLS[:]
        if name == "pooled":
            prebuild(pool, scratch, {"precision"})
            assert build_log.POOLS and build_log.POOLS[0]["workers"] == 4          # four groups at once
            assert sorted(build_log.PIECES.values()) == [2, 2]
            del build_log.LOOKUPS[:]
        write_sweep(typed.files(params, "precision"), tmp_path / name / "cells", scratch, typed.execution(params))
        files[name] = ((tmp_path / name / "cells" / "linear_map.nc").read_bytes(),
                       sum(u["built"] for u in build_log.LOOKUPS))
    assert files["pooled"][1] == 0 and files["alone"][1] == 2 and files["pooled"][0] == files["alone"][0]
