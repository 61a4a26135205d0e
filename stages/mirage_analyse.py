"""Stage mirage_analyse: every emergence scored under discontinuous and continuous metrics.

    python -m stages.mirage_analyse LINEAR_MAP_RESULTS CA_STATE_SIZE_CELLS CA_ARCHITECTURE_CELLS LM_PROBES \
        SPARSITY_ROWS OUT_DIR LENGTHS_NC

Writes OUT_DIR/linear_map.nc, OUT_DIR/automata-S<size>.nc (the control arm of each state size,
or the automata architecture sweep's cell where it is that cell with more seeds)
and OUT_DIR/language_models.nc (emergence/analysis/mirage_analysis.py), the folder replacing
the old one atomically, and LENGTHS_NC: the exact-match prediction across the sparsity sweep's
answer lengths.
"""
import sys
from pathlib import Path

from emergence.analysis import mirage_analysis as ma
from emergence.common.io import atomic_dir, read_netcdf, write_netcdf
from emergence.common.schema import load
from emergence.pipeline.stage import stage_run

if __name__ == "__main__":
    linear_map, ca_cells, ca_architecture, probes, sparsity_rows, out, lengths = map(Path, sys.argv[1:])
    with stage_run("mirage_analyse") as params, atomic_dir(out) as tmp:
        m = load(ma.MirageArgs, params["mirage"], "mirage", declared_only=True)
        args = (m.rise_threshold, m.horizon_fraction)
        resolution = {"min_subsample": m.min_subsample, "draws": m.subsample_draws}
        write_netcdf(ma.linear_map(read_netcdf(linear_map), *args, **resolution), tmp / "linear_map.nc")
        others = {f"the automata architecture sweep's {f.stem}": read_netcdf(f) for f in sorted(ca_architecture.glob("*.nc"))}
        for cell in sorted(ca_cells.glob("*.nc")):
            results = read_netcdf(cell)
            control, runs_from = ma.control_with_most_seeds(results, others)
            ds = ma.automata(results, *args, control=control, runs_from=runs_from, **resolution)
            write_netcdf(ds, tmp / f"automata-{ds.attrs['setting']}.nc")
        write_netcdf(ma.language_models(read_netcdf(probes), *args, **resolution), tmp / "language_models.nc")
    write_netcdf(ma.answer_lengths({f.stem: read_netcdf(f) for f in sorted(sparsity_rows.glob("*.nc"))}), lengths)
