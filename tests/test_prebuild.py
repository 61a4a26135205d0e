"""`make report`'s prebuild: every cell the stages to run lack, in one pool, before `dvc repro`."""
import copy

from emergence.config import load_params
from emergence.cost import stage_entries
from emergence.experiments.cache import entry_of, thread_dependent
from emergence.experiments.runner import runs_on
from emergence.prebuild import pooled_requests


def _entries(requests, scratch):
    return {entry_of(scratch, name, key) for (name, key, _, _), _ in requests}


def test_the_prebuild_asks_for_every_stages_cells_but_the_thread_dependent_ones(tmp_path):
    params = load_params(profile="smoke")
    planned = {e: cost[-1] for _, entries in stage_entries(params, tmp_path) for e, cost in entries.items()}
    pooled = _entries(pooled_requests(params, tmp_path), tmp_path)
    left = {e for e, train in planned.items() if thread_dependent(runs_on(train))}
    assert left, "the smoke profile has CPU-bfloat16 cells (the precision check)"
    assert pooled == set(planned) - left
    # a language model and the linear-map run, whose stage trains it on the task file, are among them
    names = {e.name.split("-")[0] for e in pooled}
    assert {"language_model", "linear_map", "cellular_automata"} <= names


def test_the_prebuild_asks_only_for_the_stages_dvc_will_run(tmp_path):
    params = load_params(profile="smoke")
    only = _entries(pooled_requests(params, tmp_path, {"sweep_sparsity@S08", "report_render"}), tmp_path)
    sparsity = dict(stage_entries(params, tmp_path, {"sweep_sparsity@S08"}))["sweep_sparsity"]
    assert only == set(sparsity) and only
    assert pooled_requests(params, tmp_path, set()) == []


def test_cells_the_pool_built_are_the_bytes_the_stage_would_have_built(tmp_path):
    """The prebuild's pool of one-thread workers builds a sparsity row's cells; the stage's own
    code then builds nothing and writes the file it writes when it builds them itself."""
    from emergence import build_log
    from emergence.experiments.sparsity_sweep import run_row
    from emergence.io import write_netcdf
    from emergence.prebuild import prebuild

    params = load_params(profile="smoke")  # its cells are seconds long: the stage builds them in its own process
    pool = copy.deepcopy(params)
    pool["execution"].update(worker_start_s=0.0, slowdown=1.0, workers=2)  # a pool, however short the cells
    row = params["sweeps"]["sparsity"]["grid"]["S08"]
    files = {}
    for name, pooled in (("pooled", True), ("alone", False)):
        scratch = tmp_path / name / "scratch"
        del build_log.LOOKUPS[:], build_log.POOLS[:]
        if pooled:
            prebuild(pool, scratch, {"sweep_sparsity@S08"})
            assert build_log.POOLS and build_log.POOLS[0]["workers"] == 2
            del build_log.LOOKUPS[:]
        files[name] = tmp_path / name / "row.nc"
        write_netcdf(run_row(params, "S08", row, scratch), files[name])
        built = [u for u in build_log.LOOKUPS if u["built"]]
        assert (not built) if pooled else (built and not build_log.POOLS)
    assert files["pooled"].read_bytes() == files["alone"].read_bytes()
