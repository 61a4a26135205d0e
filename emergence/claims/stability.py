"""How firmly this run's seeds hold each verdict: the seeds resampled with replacement, each
result at its own seed count, and the rules applied again. A verdict's stability is the share of
resamples that give it again; one near a threshold (an interval's end on it, a p near alpha)
comes back in about half of them, and is the kind that moves when the same code runs on another
CPU, whose float results differ in the last bits and so, after training, in each seed's times.

It is the nonparametric bootstrap (Efron and Tibshirani 1993) applied to the whole decision
rather than to one statistic; like any bootstrap it can only repeat the values this run's seeds
took, so it describes this run's evidence, not the verdict another set of seeds would give.
Results of the same seed count share one draw: the language models' probes and patching are the
same trained seeds, and a sweep's cells are trained on the same seeds too.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from multiprocessing import get_context
from typing import Callable, Mapping, Sequence, TypeVar

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

Result = xr.Dataset | dict[str, xr.Dataset]
NOT_TESTED = "(not tested)"
V, R = TypeVar("V"), TypeVar("R")


def resample_seeds(ds: xr.Dataset, n: int | None, rng: np.random.Generator,
                   draws: dict[int, np.ndarray] | None = None) -> xr.Dataset:
    """n seeds (None: as many as it has) drawn with replacement along `seed` (relabelled
    0..n-1, so no label repeats); a dataset without seeds as it is. `draws` holds the draw per
    original seed count, so that datasets of the same seeds are drawn alike. A sweep summary
    whose cells trained different numbers of seeds (its `n_seeds` per cell; the rest of `seed`
    padding) has each cell's seeds drawn from its own, with that count's draw, and padded again."""
    if "seed" not in ds.dims:
        return ds
    draws = {} if draws is None else draws

    def draw(size: int) -> np.ndarray:
        if size not in draws:
            draws[size] = rng.integers(0, size, size if n is None else n)
        return draws[size]

    size = ds.sizes["seed"]
    counts = ds["n_seeds"] if "n_seeds" in ds and ds["n_seeds"].ndim == 1 else None
    if counts is None or bool((counts == size).all()):
        picked = ds.isel(seed=draw(size))
        if counts is not None:
            picked["n_seeds"] = xr.full_like(counts, picked.sizes["seed"])
    else:
        rows = [draw(int(c)) for c in counts.values]
        width = max(len(r) for r in rows)
        # position c of a c-seed cell is padding (c < size), so it pads the resampled row
        index = np.stack([np.concatenate([r, np.full(width - len(r), int(c))]) for r, c in zip(rows, counts.values)])
        (cell,) = counts.dims
        picked = ds.isel({cell: xr.DataArray(np.arange(ds.sizes[cell]), dims=cell),
                          "seed": xr.DataArray(index, dims=(cell, "seed"))})
        picked["n_seeds"] = (counts.dims, np.array([len(r) for r in rows], dtype=counts.dtype), counts.attrs)
    return picked.assign_coords(seed=np.arange(picked.sizes["seed"])) if "seed" in picked.coords else picked


def resample_result(result: Result, n: int | None, rng: np.random.Generator,
                    draws: dict[int, np.ndarray]) -> Result:
    """`resample_seeds` of a result file, or of each file of a result folder."""
    if isinstance(result, dict):
        return {name: resample_seeds(ds, n, rng, draws) for name, ds in result.items()}
    return resample_seeds(result, n, rng, draws)


def _resampled(results: Mapping[str, Result], n: int | None, rng: np.random.Generator | None,
               draws: dict[int, np.ndarray]) -> dict[str, Result]:
    return {name: resample_result(result, n, rng, draws) for name, result in results.items()}


def seed_draws(results: Mapping[str, Result], draws: int, rng: np.random.Generator,
               n: int | None = None) -> list[dict[int, np.ndarray]]:
    """Each resample's seeds, per original seed count: what `resample_result` draws reading
    `results` in order (`n` seeds each; None: each result's own count)."""
    out = []
    for _ in range(draws):
        picks: dict[int, np.ndarray] = {}
        _resampled(results, n, rng, picks)
        out.append(picks)
    return out


_WORKER: dict = {}


def _start_worker(decide, results) -> None:
    _WORKER.update(decide=decide, results=results)


def _decide_in_worker(variant):
    return _WORKER["decide"](_WORKER["results"], variant)


def decide_each(decide: Callable[[Mapping[str, Result], V], R], results: Mapping[str, Result], variants: Sequence[V],
                workers: int = 1, desc: str | None = None) -> list[R]:
    """[decide(results, v) for v in variants], in order, on `workers` spawned processes that
    receive `results` once (`decide` must pickle: a module-level function or a partial of one);
    `desc`: a progress bar's label."""
    bar = dict(total=len(variants), desc=desc, disable=desc is None)
    if workers <= 1 or len(variants) < 2:
        return [decide(results, v) for v in tqdm(variants, **bar)]
    with ProcessPoolExecutor(min(workers, len(variants)), mp_context=get_context("spawn"),
                             initializer=_start_worker, initargs=(decide, dict(results))) as pool:
        return list(tqdm(pool.map(_decide_in_worker, variants), **bar))


def _on_resample(results: Mapping[str, Result], picks: dict[int, np.ndarray], apply) -> Mapping[str, str]:
    return apply(_resampled(results, None, None, picks))


def resampled_verdicts(apply: Callable[[Mapping[str, Result]], Mapping[str, str]], results: Mapping[str, Result],
                       draws: int, rng: np.random.Generator, n: int | None = None, desc: str | None = None,
                       workers: int = 1) -> dict[str, Counter]:
    """{row key: Counter of verdicts} of `apply` (results -> {row key: verdict}) over `draws`
    resamples of the seeds (`n` seeds each; None: each result's own count). The draws are made
    first, so `workers` processes give the same counts as one (`apply` must pickle)."""
    picks = seed_draws(results, draws, rng, n)
    counts: dict[str, Counter] = defaultdict(Counter)
    for drawn in decide_each(partial(_on_resample, apply=apply), results, picks, workers, desc):
        for key, verdict in drawn.items():
            counts[key][verdict] += 1
    return dict(counts)


def with_untested(counts: Mapping[str, int], draws: int) -> dict[str, int]:
    """A row's verdict counts, with the resamples that did not give the row at all (its rule
    found nothing to decide on them) counted as NOT_TESTED, so that every row's counts add up
    to the draws and a verdict's share counts them against it."""
    out = dict(counts)
    if draws > sum(out.values()):
        out[NOT_TESTED] = draws - sum(out.values())
    return out


def stability(verdict: str, counts: Mapping[str, int] | None) -> float | None:
    """The share of resamples that gave `verdict` again (None: not resampled)."""
    total = sum(counts.values()) if counts else 0
    return counts.get(verdict, 0) / total if total else None
