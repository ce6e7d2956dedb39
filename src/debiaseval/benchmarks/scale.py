"""The ``scale`` section of ``python -m debiaseval.benchmark`` (see docs/performance.md).

E1's stages, E5's scoring and URE, and E6's KL weights and leave-one-out on the
``synthetic`` dataset at a few sizes, each size in its own child process (so
that its peak resident memory, ``resource.getrusage`` of the child, is its
own). A size of n million MNAR pairs has the ML-20M aspect with ML-20M's
ratings per user (about 144): ``round(138,493 · n/20)`` users ×
``round(26,744 · n/20)`` items, so 20 is the ML-20M shape. The MAR part adds
``n_mar`` uniform items per user.

The stages are the workflow's own functions (:mod:`debiaseval.experiments.e1`
``split_step``, ``testset_step``, ``tune_step``, ``evaluate_step``;
:func:`debiaseval.experiments.e5.evaluate_models`;
:func:`debiaseval.experiments.e6.evaluate_over_time`) with the default E1 test
sets and recommenders, one grid point each (``--scale-grid``), MF trained a fixed
number of epochs (no early stopping). E6 runs on the MNAR log cut into two
snapshots by a random order of its pairs, the leave-one-out on a uniform sample
of ``--scale-e6-users`` users (the KL weights on every user); ``--scale-stages e1`` runs
E1's stages alone (E5's and E6's follow them). E1's evaluate stage runs twice in the same
process, with the same bootstrap, without and with E1's default weighting estimators
(``e1.estimators``: one SNIPS, one DR, with their diagnostics and the sensitivity bounds of
``e1.sensitivity.gammas``), and the ratios of their wall and CPU times are
printed. Printed: per size and stage the wall time, CPU time and the peak RSS so far; then
the growth exponent of time between consecutive sizes, log(t2/t1)/log(pairs2/pairs1).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ML20M_SHAPE", "STAGES", "child", "run", "scale_shape"]

STAGES = ("e1", "e5", "e6")
"""The experiments whose stages ``--scale-stages`` can choose (E1's always run: E5 and E6
use its split)."""

ML20M_SHAPE = (138_493, 26_744)
"""MovieLens-20M's users × items."""
_ML20M_PAIRS = 20.0  # million
_RECOMMENDERS = {  # E1's default recommenders at one grid point each
    "Random": ("random", {}),
    "PosPop": ("pospop", {}),
    "AvgRating": ("avgrating", {}),
    "UserKNN": ("userknn", {"k": [50]}),
    "ItemKNN": ("itemknn", {"k": [50]}),
    "MF": ("mf", {"factors": [20], "alpha": [0.0]}),
}


def scale_shape(million_pairs: float) -> tuple[int, int, float]:
    """(n_users, n_items, density) of a size: ML-20M's aspect and density, users and items
    scaled by √(pairs / 20M)."""
    ratio = math.sqrt(million_pairs / _ML20M_PAIRS)
    n_users = max(2, round(ML20M_SHAPE[0] * ratio))
    n_items = max(2, round(ML20M_SHAPE[1] * ratio))
    return n_users, n_items, min(0.5, million_pairs * 1e6 / (n_users * n_items))


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _stage(rows: list[dict[str, Any]], name: str, fn: Callable[[], Any]) -> Any:
    wall, cpu = time.perf_counter(), _cpu()
    out = fn()
    row = {
        "stage": name,
        "seconds": time.perf_counter() - wall,
        "cpu_seconds": _cpu() - cpu,
        "peak_gb": _peak_gb(),
    }
    rows.append(row)
    print(
        f"    {name:<28} {row['seconds']:9.2f} s  (cpu {row['cpu_seconds']:8.2f} s)"
        f"  peak {row['peak_gb']:6.2f} GB",
        flush=True,
    )
    return out


def _best_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per stage, in first-run order: a stage run several times keeps its smallest
    wall and CPU times (each on its own) and its largest peak."""
    best: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["stage"] not in best:
            best[row["stage"]] = dict(row)
            continue
        kept = best[row["stage"]]
        kept["seconds"] = min(kept["seconds"], row["seconds"])
        kept["cpu_seconds"] = min(kept["cpu_seconds"], row["cpu_seconds"])
        kept["peak_gb"] = max(kept["peak_gb"], row["peak_gb"])
    return list(best.values())


def child(options: dict[str, Any]) -> list[dict[str, Any]]:
    """Run every stage at one size in this process; return one row per stage."""
    from debiaseval.data.catalog import positive_threshold_of
    from debiaseval.data.preprocess import build_interactions
    from debiaseval.data.synthetic_dataset import synthetic_raw
    from debiaseval.evaluation.testsets import evaluate_recommenders
    from debiaseval.experiments import e1, e5, e6
    from debiaseval.workflow.config import validate_config

    million, seed = float(options["million"]), int(options["seed"])
    n_users, n_items, density = scale_shape(million)
    full = validate_config({}, "e1")
    block = full["e1"]
    e6_step = e6.E6Evaluate.of(validate_config({}, "e6"), "synthetic")
    threshold = positive_threshold_of("synthetic", block["positive_threshold"], full["sources"])
    sizes = {"n_users": n_users, "n_items": n_items}
    rows: list[dict[str, Any]] = []
    raw = _stage(
        rows,
        "generate",
        lambda: synthetic_raw(
            n_users=n_users, n_items=n_items, density=density, n_mar=options["n_mar"], seed=seed
        ),
    )
    print(f"    {len(raw.mnar):,} MNAR + {len(raw.mar):,} MAR pairs", flush=True)
    interactions, _, _ = _stage(rows, "preprocess", lambda: build_interactions(raw))
    split = _stage(
        rows,
        "E1 split",
        lambda: e1.split_step(
            interactions, e1.E1Split.of(full, "synthetic"), dataset="synthetic", seed=seed
        ),
    )

    intervening = e1.E1Intervene.of(full, "synthetic")

    def testsets() -> dict[str, pd.DataFrame]:
        out = {}
        for name in intervening.testsets:
            out[name], _ = e1.testset_step(
                split, name, intervening, dataset="synthetic", seed=seed, **sizes
            )
        return out

    tests = _stage(rows, "E1 test sets", testsets)
    tuning = e1.E1Train.of(full, "synthetic")
    tuning = dataclasses.replace(tuning, tuning={**tuning.tuning, "early_stopping": None})
    recs = {}
    for name in options["recommenders"]:
        algorithm, grid = _RECOMMENDERS[name]
        params = {"epochs": options["mf_epochs"]} if algorithm == "mf" else {}
        spec = {"algorithm": algorithm, "grid": grid, "params": params}
        _, recs[name] = _stage(
            rows,
            f"E1 tune+rank {name}",
            lambda spec=spec, name=name: e1.tune_step(
                split,
                name,
                spec,
                tuning,
                chunk=0,
                dataset="synthetic",
                seed=seed,
                **sizes,
            ),
        )
    evaluation = {key: block[key] for key in ("ks", "metrics", "drop_train_overlap")}
    sizes_of_step = {"seed": seed, "n_items": n_items, "n_users": n_users}
    with_estimators = e1.E1Evaluate.of(full, "synthetic")
    step = dataclasses.replace(with_estimators, estimators={}, gammas=[])  # but the estimators
    import scipy.stats  # noqa: F401  (the paired tests' import, a fixed cost: outside the stages)

    # E1's evaluate stage three ways, in turn, ``evaluate_repeat`` times (each stage's best time
    # is kept, so the ratios do not depend on which stage first touched fresh memory)
    for _ in range(int(options.get("evaluate_repeat", 1))):
        # The baseline of the evaluate stage, in the same process: the means only, without the
        # per-user values, the bootstrap and the paired tests that evaluate_step adds.
        _stage(
            rows,
            "E1 evaluate (means only)",
            lambda: evaluate_recommenders(
                recs,
                {"gt": split[split["part"] == "gt"], **tests},
                split[split["part"] == "train"],
                n_items=n_items,
                positive_threshold=threshold,
                **evaluation,
            ),
        )
        _stage(
            rows, "E1 evaluate", lambda: e1.evaluate_step(split, recs, tests, step, **sizes_of_step)
        )
        # the same stage with E1's default weighting estimators (one SNIPS, one DR), their
        # diagnostics and the SNIPS sensitivity bounds and Γ*, same process: the same call but
        # for estimators= and gammas= (the same bootstrap resamples and level)
        _stage(
            rows,
            "E1 evaluate+estimators",
            lambda: e1.evaluate_step(split, recs, tests, with_estimators, **sizes_of_step),
        )
    rows[:] = _best_of(rows)
    stages = options.get("stages", STAGES)
    if "e5" not in stages and "e6" not in stages:
        return rows
    part = split["part"].to_numpy()
    labelled = pd.concat(
        [split[part == "train"], split[part == "gt"].assign(part="exposed")], ignore_index=True
    )
    for name in options["e5_models"] if "e5" in stages else []:
        algorithm, grid = _RECOMMENDERS[name]
        _stage(
            rows,
            f"E5 score+URE {name}",
            lambda algorithm=algorithm, grid=grid, name=name: e5.evaluate_models(
                labelled,
                e5.E5Evaluate(
                    model=name,
                    spec={"algorithm": algorithm, "params": {}, "grid": grid},
                    ks=[10, 50],
                    positive_threshold=threshold,
                    ties="rank",
                    batch_size=block["batch_size"],
                ),
                seed=seed,
                **sizes,
            ),
        )
    if "e6" not in stages:
        return rows
    mnar = interactions[interactions["part"] == "mnar"]
    order = np.random.default_rng(seed).permutation(len(mnar))
    log = pd.DataFrame(
        {
            "user": mnar["user"].to_numpy(),
            "item": mnar["item"].to_numpy(),
            "timestamp": order.astype(np.int64),
        }
    )
    cuts = np.array([len(log) // 2, len(log)], dtype=np.int64)
    _stage(
        rows,
        "E6 KL weights + LOO",
        lambda: e6.evaluate_over_time(
            log,
            cuts,
            dataclasses.replace(
                e6_step,
                active_items=[None],
                interval="binomial",
                sample_users=options["e6_users"],
            ),
            boosted=None,
            dataset="synthetic",
            seed=seed,
            **sizes,
        ),
    )
    return rows


def _run_child(options: dict[str, Any], threads: int) -> tuple[list[dict[str, Any]], float]:
    """One size in a child process: its stage rows and its peak RSS (GiB) from getrusage."""
    env = {**os.environ}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    code = (
        "import json, sys; from debiaseval.benchmarks.scale import child; "
        "print('@@' + json.dumps(child(json.loads(sys.argv[1]))))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(options)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    rows: list[dict[str, Any]] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("@@"):
            rows = json.loads(line[2:])
        else:
            print(line, end="", flush=True)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"the scale run at {options['million']}M pairs failed")
    return rows, usage.ru_maxrss / 2**20


def run(args: argparse.Namespace, out: dict[str, float]) -> None:
    """Every size of ``args.scale_sizes`` in a child process; a table and growth exponents."""
    sizes = sorted(float(s) for s in str(args.scale_sizes).split(","))
    recommenders = [r.strip() for r in str(args.scale_recommenders).split(",") if r.strip()]
    unknown = sorted(set(recommenders) - set(_RECOMMENDERS))
    if unknown:
        raise ValueError(
            f"--scale-recommenders: unknown {unknown}; expected some of {', '.join(_RECOMMENDERS)}"
        )
    e5_models = [m for m in ("ItemKNN", "PosPop") if m in recommenders]
    stages = [s.strip() for s in str(args.scale_stages).split(",")]
    unknown = sorted(set(stages) - set(STAGES) - {""})
    if unknown:
        raise ValueError(f"--scale-stages: unknown {unknown}; expected some of {', '.join(STAGES)}")
    if args.scale_evaluate_repeat < 1:
        raise ValueError(
            f"--scale-evaluate-repeat: expected at least 1, got {args.scale_evaluate_repeat}"
        )
    results: dict[float, list[dict[str, Any]]] = {}
    peaks: dict[float, float] = {}
    for million in sizes:
        n_users, n_items, density = scale_shape(million)
        print(
            f"scale {million:g}M: {n_users:,} users x {n_items:,} items, density {density:.5f}",
            flush=True,
        )
        options = {
            "million": million,
            "seed": 0,
            "n_mar": args.n_mar,
            "recommenders": recommenders,
            "e5_models": e5_models,
            "mf_epochs": args.scale_mf_epochs,
            "e6_users": args.scale_e6_users,
            "evaluate_repeat": args.scale_evaluate_repeat,
            "stages": stages,
        }
        results[million], peaks[million] = _run_child(options, args.threads)
        total = sum(r["seconds"] for r in results[million])
        out[f"scale {million:g}M total [s]"] = total
        out[f"scale {million:g}M peak RSS [GB]"] = peaks[million]
        for row in results[million]:
            out[f"scale {million:g}M {row['stage']} [s]"] = row["seconds"]
            out[f"scale {million:g}M {row['stage']} cpu [s]"] = row["cpu_seconds"]
        means = _seconds(results[million], "E1 evaluate (means only)", "cpu_seconds")
        if means > 0:
            ratio = _seconds(results[million], "E1 evaluate", "cpu_seconds") / means
            out[f"scale {million:g}M E1 evaluate / means only (cpu)"] = ratio
            print(
                f"  E1 evaluate with per-user values, bootstrap and paired tests: {ratio:.2f}x "
                "the means only (CPU time, same process)"
            )
        print(f"  total {total:.1f} s, peak RSS {peaks[million]:.2f} GB (getrusage of the child)")
        plain = _seconds(results[million], "E1 evaluate")
        weighted = _seconds(results[million], "E1 evaluate+estimators")
        plain_cpu = _seconds(results[million], "E1 evaluate", "cpu_seconds")
        weighted_cpu = _seconds(results[million], "E1 evaluate+estimators", "cpu_seconds")
        if plain > 0 and weighted > 0:
            out[f"scale {million:g}M estimators / evaluate"] = weighted / plain
            print(
                f"  E1 evaluate with the default estimators: {weighted:.2f} s vs {plain:.2f} s "
                f"without ({weighted / plain:.2f}x, the same process and bootstrap)"
            )
        if plain_cpu > 0 and weighted_cpu > 0:
            out[f"scale {million:g}M estimators / evaluate (cpu)"] = weighted_cpu / plain_cpu
            print(
                f"  ... in CPU time: {weighted_cpu:.2f} s vs {plain_cpu:.2f} s "
                f"({weighted_cpu / plain_cpu:.2f}x)"
            )
    print(_table(results, peaks))
    for small, large in itertools.pairwise(sizes):
        for stage in [r["stage"] for r in results[large]] + ["total"]:
            for key, what in (("seconds", ""), ("cpu_seconds", " cpu")):
                t1, t2 = _seconds(results[small], stage, key), _seconds(results[large], stage, key)
                if t1 > 0 and t2 > 0:
                    exponent = math.log(t2 / t1) / math.log(large / small)
                    out[f"scale exponent {small:g}M->{large:g}M {stage}{what}"] = exponent
        key = f"scale exponent {small:g}M->{large:g}M total"
        print(
            f"  time growth {small:g}M -> {large:g}M: pairs^{out.get(key, math.nan):.2f} wall, "
            f"pairs^{out.get(key + ' cpu', math.nan):.2f} cpu (total)"
        )


def _seconds(rows: list[dict[str, Any]], stage: str, key: str = "seconds") -> float:
    if stage == "total":
        return sum(r[key] for r in rows)
    return next((r[key] for r in rows if r["stage"] == stage), 0.0)


def _exponent(t1: float, t2: float, p1: float, p2: float) -> str:
    return f"{math.log(t2 / t1) / math.log(p2 / p1):.2f}" if t1 > 0 and t2 > 0 else "–"


def _table(results: dict[float, list[dict[str, Any]]], peaks: dict[float, float]) -> str:
    """A Markdown table: one row per stage; per size wall (CPU) seconds; per pair of sizes the
    growth exponents of wall and CPU time; the children's peak RSS."""
    sizes = list(results)
    stages = list(dict.fromkeys(r["stage"] for rows in results.values() for r in rows))
    pairs = list(itertools.pairwise(sizes))
    head = ["stage", *[f"{m:g}M: wall (cpu) [s]" for m in sizes]]
    head += [f"exponent {a:g}→{b:g}M: wall (cpu)" for a, b in pairs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for stage in [*stages, "total"]:
        wall = {m: _seconds(results[m], stage) for m in sizes}
        cpu = {m: _seconds(results[m], stage, "cpu_seconds") for m in sizes}
        cells = [f"{wall[m]:.1f} ({cpu[m]:.1f})" if wall[m] else "–" for m in sizes]
        cells += [
            f"{_exponent(wall[a], wall[b], a, b)} ({_exponent(cpu[a], cpu[b], a, b)})"
            for a, b in pairs
        ]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    cells = [f"{peaks[m]:.2f}" for m in sizes] + [""] * len(pairs)
    lines.append("| peak RSS [GB] | " + " | ".join(cells) + " |")
    return "\n".join(lines)
