"""Recommendation lists made elsewhere, checked and turned into the project's top-k lists.

Another framework's output enters an experiment as one file per dataset and seed
(``e1.recommenders.<Name>: {algorithm: external, recs: ...}``, or
:func:`debiaseval.api.evaluate_lists` in memory): rows ``user``, ``item`` and a
``score`` (higher = better) or a ``rank`` (1 = best), or both. Ids are the
dataset's raw ids as in its files (``ids: raw``) or the project's (``ids: internal``),
see :mod:`debiaseval.data.ids`. :func:`prepare_lists` checks them the way a
reviewer would and returns them in the format of
:func:`debiaseval.recommenders.ranking.top_k`; every problem is a :class:`ListsError`
naming the source, with counts and a few examples:

- an unknown user or item; a duplicated (user, item) pair; a score or rank that is
  not a finite number; a rank and a score that order a user's items differently;
- a listed item in the user's own training part (leakage: the lists were made
  with other training data), unless ``on_train_items="drop"``, which drops and
  counts them (a warning).

**Order** (docs/own-recommender.md): by ``score`` descending, ties by the smaller
item id, as :func:`~debiaseval.recommenders.ranking.top_k` ranks; with ``rank`` only,
by rank ascending (ties by the smaller item id) and the score is ``-rank``; with
both, the rank's order, and the scores must not increase along it. The written
rank is the position in that order, 1-based, after dropping training items.

Lists shorter than the largest k give a warning (:func:`short_lists_warning`);
E5 refuses a K larger than a list (:func:`check_depth`) and reports the traditional
Recall@K only where the lists decide it (:func:`traditional_decided`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from debiaseval.data.ids import format_ids, raw_ids, to_internal
from debiaseval.io.errors import ListsError
from debiaseval.recommenders.registry import EXTERNAL

__all__ = [
    "EXTERNAL",
    "IDS",
    "ON_TRAIN_ITEMS",
    "ListScores",
    "ListsError",
    "check_depth",
    "check_template",
    "lists_of_seed",
    "lists_path",
    "missing_lists",
    "prepare_lists",
    "read_lists",
    "seed_lists",
    "short_lists_warning",
    "traditional_decided",
]

IDS = ("raw", "internal")
"""How a lists file names users and items: the dataset's raw ids, or the project's."""
ON_TRAIN_ITEMS = ("error", "drop")
"""What a listed item in the user's own training part does: stop the run, or be dropped."""
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".gz": "csv"}
_PLACEHOLDERS = ("dataset", "seed")
_RANK_MAX = np.iinfo(np.int16).max


# --------------------------------------------------------------------------- files


def check_template(template: str) -> None:
    """Raise ``ValueError`` unless ``template`` is a path whose only placeholders are
    ``{dataset}`` and ``{seed}``."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ValueError(f"{template!r} is not a path template ({exc})") from None
    unknown = [f for f in fields if f not in _PLACEHOLDERS]
    if unknown:
        raise ValueError(
            f"{template!r} has placeholder(s) {', '.join('{' + f + '}' for f in unknown)}; "
            "only {dataset} and {seed} are filled in"
        )
    if _format(template) is None:
        raise ValueError(f"{template!r} must end in .parquet or .csv (or .csv.gz)")


def lists_path(template: str, *, dataset: str, seed: int) -> str:
    """The lists file of ``dataset`` and ``seed``: ``template`` with both filled in."""
    return template.format(dataset=dataset, seed=seed)


def lists_of_seed(
    spec: Mapping[str, Any],
    *,
    name: str,
    where: str,
    dataset: str,
    seed: int,
    lists: Mapping[str, Mapping[int, pd.DataFrame]] | None = None,
) -> tuple[pd.DataFrame, str, str | None]:
    """One seed's lists of the external entry ``name`` (config key ``where``), with the
    source and config key that their messages name: ``lists[name][seed]`` when the lists
    are given in memory (:func:`debiaseval.api.evaluate_lists`), else the entry's ``recs``
    file for ``dataset`` and ``seed``."""
    if lists is not None and name in lists:
        by_seed = lists[name]
        if seed not in by_seed:
            raise ListsError(
                f"lists[{name!r}] have no lists for seed {seed} (seeds given: "
                f"{', '.join(map(str, sorted(by_seed))) or 'none'})"
            )
        return by_seed[seed], f"lists[{name!r}][{seed}]", None
    path = lists_path(spec["recs"], dataset=dataset, seed=seed)
    if Path(path).is_dir():
        raise ListsError(
            f"{where}.recs: {path} is a folder, not a lists file (the lists of seed {seed} on "
            f"{dataset}); expected a Parquet or CSV file"
        )
    if not Path(path).is_file():
        raise ListsError(f"{where}.recs: {path} not found (the lists of seed {seed} on {dataset})")
    return read_lists(path), path, where


def missing_lists(
    template: str, *, where: str, datasets: Sequence[str], seeds: Sequence[int]
) -> str | None:
    """One line naming every missing lists file of an entry, for a run that needs them
    (before any job runs); None when every file of ``datasets`` × ``seeds`` exists."""
    paths = [lists_path(template, dataset=d, seed=s) for d in datasets for s in seeds]
    folders = list(dict.fromkeys(p for p in paths if Path(p).is_dir()))
    if folders:
        shown = ", ".join(folders[:4]) + (
            f" and {len(folders) - 4:,} more" if len(folders) > 4 else ""
        )
        return (
            f"{where}: {len(folders):,} of {len(set(paths)):,} lists paths are folders, not "
            f"files: {shown} (recs: {template}); expected one Parquet or CSV file per dataset "
            "and seed"
        )
    missing = list(dict.fromkeys(p for p in paths if not Path(p).is_file()))
    if not missing:
        return None
    shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4:,} more" if len(missing) > 4 else "")
    return (
        f"{where}: {len(missing):,} of {len(set(paths)):,} lists files are missing: {shown} "
        f"(recs: {template}, one file per dataset and seed; train on the seed's exported split, "
        "snakemake export)"
    )


def _format(path: str | Path) -> str | None:
    name = Path(path).name.lower()
    if name.endswith(".gz") and not name.endswith(".csv.gz"):
        return None
    return _FORMATS.get(Path(name).suffix)


def read_lists(path: str | Path) -> pd.DataFrame:
    """The rows of a lists file, Parquet or CSV (``.csv``, ``.csv.gz``), as stored.

    CSV ids stay text (``"007"`` is not ``7`` until compared with the dataset's
    ids, :func:`debiaseval.data.ids.to_internal`), and so do its scores and ranks
    until :func:`prepare_lists` checks them. Raises :class:`ListsError` naming the
    file when it is missing, of another format or unreadable.
    """
    kind = _format(path)
    if kind is None:
        raise ListsError(f"{path}: lists must be a Parquet (.parquet) or CSV (.csv) file")
    if Path(path).is_dir():
        raise ListsError(f"{path}: is a folder, not a lists file; expected a {kind} file")
    try:
        if kind == "parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise ListsError(f"{path}: no such lists file") from None
    except (OSError, ValueError) as exc:
        reason = " ".join(str(exc).split())
        raise ListsError(f"{path}: not a readable {kind} lists file ({reason})") from None


# --------------------------------------------------------------------------- checks


def _examples(mask: np.ndarray, *columns: np.ndarray, limit: int = 3) -> str:
    """The first ``limit`` rows where ``mask`` holds, as ``user u item i`` pairs."""
    rows = np.flatnonzero(mask)[:limit]
    if len(columns) == 1:
        return format_ids(columns[0][rows], limit)
    users, items = columns
    return ", ".join(f"user {format_ids(users[[r]])} item {format_ids(items[[r]])}" for r in rows)


def _numbers(lists: pd.DataFrame, column: str, source: str) -> np.ndarray:
    values = pd.to_numeric(lists[column], errors="coerce").to_numpy(np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        raise ListsError(
            f"{source}: column {column} has {int(bad.sum()):,} value(s) that are not finite "
            f"numbers, e.g. {_examples(bad, lists[column].to_numpy())}"
        )
    return values


def _check_known(
    lists: pd.DataFrame,
    users: np.ndarray,
    items: np.ndarray,
    user_ids: np.ndarray,
    item_ids: np.ndarray,
    *,
    ids: str,
    source: str,
    where: str | None,
) -> None:
    bad_users, bad_items = users < 0, items < 0
    if not (bad_users.any() or bad_items.any()):
        return
    found = []
    for kind, bad in (("user", bad_users), ("item", bad_items)):
        if bad.any():
            found.append(
                f"{int(bad.sum()):,} with an unknown {kind} "
                f"(e.g. {_examples(bad, lists[kind].to_numpy())})"
            )
    if ids == "raw":
        hint = (
            f"the lists must name the dataset's raw ids as in its files (users such as "
            f"{format_ids(user_ids)}; items such as {format_ids(item_ids)})"
            f"{_at('ids: internal', where, ' or, with ')} the project's ids"
        )
    else:
        hint = (
            f"with ids: internal, users are 0 .. {len(user_ids) - 1} and items "
            f"0 .. {len(item_ids) - 1}{_at('ids: raw', where, '; the raw ids need ')}"
        )
    raise ListsError(f"{source}: of {len(lists):,} rows, {' and '.join(found)}; {hint}")


def _check_ranks(
    rank: np.ndarray,
    user: np.ndarray,
    given: np.ndarray,
    raw_user: np.ndarray,
    raw_item: np.ndarray,
    source: str,
) -> None:
    """Ranks are positive integers (1 = best), each given once within a user's list."""
    bad = (rank < 1) | (rank != np.floor(rank))
    if bad.any():
        raise ListsError(
            f"{source}: column rank has {int(bad.sum()):,} value(s) that are not positive "
            f"integers, e.g. {_examples(bad, given)}; expected 1 for a user's best item, then "
            "2, 3, ..."
        )
    order = np.lexsort((rank, user))
    same = np.zeros(rank.size, dtype=bool)
    same[1:] = (user[order][1:] == user[order][:-1]) & (rank[order][1:] == rank[order][:-1])
    if same.any():
        at = order[int(np.flatnonzero(same)[0])]
        before = order[int(np.flatnonzero(same)[0]) - 1]
        n_users = np.unique(user[order][same]).size
        raise ListsError(
            f"{source}: {int(same.sum()):,} rank(s) repeated within the lists of {n_users:,} "
            f"user(s), e.g. user {format_ids(raw_user[[at]])}: rank {rank[at]:g} given to items "
            f"{format_ids(raw_item[[before]])} and {format_ids(raw_item[[at]])}; expected each "
            "item of a user's list its own rank"
        )


def _check_not_raw(
    lists: pd.DataFrame,
    user: np.ndarray,
    item: np.ndarray,
    train: pd.DataFrame,
    users: pd.DataFrame,
    items: pd.DataFrame,
    n_users: int,
    n_items: int,
    source: str,
    where: str | None,
) -> None:
    """Lists said to be in the project's ids (``ids: internal``) that read as the dataset's
    raw ids: every id is a raw one, and as raw ids none of the pairs is a training pair
    while as the project's ids some are (the telltale of ids read in the wrong space)."""
    user_ids, item_ids = raw_ids(users, "user", n_users), raw_ids(items, "item", n_items)
    if np.array_equal(user_ids, np.arange(n_users)) and np.array_equal(
        item_ids, np.arange(n_items)
    ):
        return  # raw ids are the project's: nothing tells them apart
    raw_user, raw_item = to_internal(lists["user"], user_ids), to_internal(lists["item"], item_ids)
    if (raw_user < 0).any() or (raw_item < 0).any():
        return
    train_keys = np.unique(
        _keys(train["user"].to_numpy(np.int64), train["item"].to_numpy(np.int64), n_items)
    )
    known = (user >= 0) & (item >= 0)
    as_internal = int(np.isin(_keys(user[known], item[known], n_items), train_keys).sum())
    as_raw = int(np.isin(_keys(raw_user, raw_item, n_items), train_keys).sum())
    if known.all() and not (as_internal > 0 and as_raw == 0):
        return
    what = (
        f"{int((~known).sum()):,} of {len(lists):,} rows name no user or item of the project"
        if not known.all()
        else f"{as_internal:,} of {len(lists):,} listed pairs are training pairs"
    )
    raise ListsError(
        f"{source}: the lists are read with ids: internal, but they look like the dataset's raw "
        f"ids: as the project's ids {what}, as raw ids every id is known and no pair is a "
        f"training pair{_at('ids: raw', where, '; set ')}"
    )


def _at(setting: str, where: str | None, lead: str) -> str:
    """``lead`` + the setting that changes the behaviour, with its config key when known."""
    return f"{lead}{setting}" + (f" (at {where})" if where else "")


def _keys(users: np.ndarray, items: np.ndarray, n_items: int) -> np.ndarray:
    return users.astype(np.int64) * np.int64(n_items) + items.astype(np.int64)


def _user_runs(sorted_users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the runs of equal values of a sorted array."""
    if sorted_users.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    first = np.concatenate(([True], sorted_users[1:] != sorted_users[:-1]))
    starts = np.flatnonzero(first)
    return starts, np.diff(np.append(starts, sorted_users.size))


def prepare_lists(
    lists: pd.DataFrame,
    *,
    train: pd.DataFrame,
    n_users: int,
    n_items: int,
    users: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
    ids: str = "raw",
    on_train_items: str = "error",
    depth: int | None = None,
    source: str,
    where: str | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Checked lists in the project's ids, ranked: ``(recs, warnings)``.

    ``lists``: rows ``user``, ``item`` and ``score`` and/or ``rank``, ids as ``ids``
    says (raw ids are looked up in the ``users``/``items`` tables the experiment reads:
    E1's ``results/<study>/e1/<dataset>/data/``, E5's ``results/<study>/data/<dataset>/`` (on fully
    exposed data ``results/<study>/e5/<dataset>/``); without tables they are the project's).
    ``train``: the seed's training pairs (``user``, ``item``, project ids), which
    must not be listed (``on_train_items``). ``depth``: keep each user's first
    ``depth`` items (E1 keeps max(ks), as its models' lists). ``source`` names the
    lists in messages (the file), ``where`` the config entry.

    ``recs`` has the columns and dtypes of :func:`~debiaseval.recommenders.ranking.top_k`
    (user int32, item int32, rank int16 1-based, score float32; ranks past 32767 int32),
    sorted by user then rank; ``warnings`` says what was dropped. Raises
    :class:`ListsError` (see the module's checks).
    """
    if ids not in IDS:
        raise ValueError(f"ids must be one of {IDS}, got {ids!r}")
    if on_train_items not in ON_TRAIN_ITEMS:
        raise ValueError(f"on_train_items must be one of {ON_TRAIN_ITEMS}, got {on_train_items!r}")
    has_score, has_rank = "score" in lists.columns, "rank" in lists.columns
    missing = [c for c in ("user", "item") if c not in lists.columns]
    if missing or not (has_score or has_rank):
        need = missing + ([] if has_score or has_rank else ["score or rank"])
        raise ListsError(
            f"{source}: lists lack column(s) {', '.join(need)} (columns: "
            f"{', '.join(map(str, lists.columns)) or 'none'}); expected user, item and "
            "score or rank"
        )
    lists = lists.reset_index(drop=True)
    user_ids = raw_ids(users if ids == "raw" else None, "user", n_users)
    item_ids = raw_ids(items if ids == "raw" else None, "item", n_items)
    user = to_internal(lists["user"], user_ids)
    item = to_internal(lists["item"], item_ids)
    if ids == "internal" and users is not None and items is not None:
        _check_not_raw(lists, user, item, train, users, items, n_users, n_items, source, where)
    _check_known(lists, user, item, user_ids, item_ids, ids=ids, source=source, where=where)
    score = _numbers(lists, "score", source) if has_score else None
    rank = _numbers(lists, "rank", source) if has_rank else None
    raw_user, raw_item = lists["user"].to_numpy(), lists["item"].to_numpy()
    if rank is not None:
        _check_ranks(rank, user, lists["rank"].to_numpy(), raw_user, raw_item, source)

    keys = _keys(user, item, n_items)
    dup = pd.Series(keys).duplicated(keep="first").to_numpy()
    if dup.any():
        raise ListsError(
            f"{source}: {int(dup.sum()):,} duplicated (user, item) pair(s) among "
            f"{len(lists):,} rows, e.g. {_examples(dup, raw_user, raw_item)}; list an item "
            "at most once per user"
        )

    warnings_: list[str] = []
    train_keys = np.unique(
        _keys(train["user"].to_numpy(np.int64), train["item"].to_numpy(np.int64), n_items)
    )
    leaked = np.isin(keys, train_keys)
    if leaked.any():
        n, n_users_leaked = int(leaked.sum()), int(np.unique(user[leaked]).size)
        what = f"{n:,} listed pair(s) of {n_users_leaked:,} user(s)"
        if on_train_items == "error":
            raise ListsError(
                f"{source}: {what} are in the user's own training part (leakage: lists made "
                "with other training data?), e.g. "
                f"{_examples(leaked, raw_user, raw_item)}; train on this seed's training part "
                f"(snakemake export){_at('on_train_items: drop', where, ', or drop them with ')}"
            )
        warnings_.append(
            f"{source}: dropped {what} that are in the user's own training part "
            "(on_train_items: drop)"
        )
        keep = ~leaked
        user, item, raw_user, raw_item = user[keep], item[keep], raw_user[keep], raw_item[keep]
        score = None if score is None else score[keep]
        rank = None if rank is None else rank[keep]

    if rank is not None and score is not None:
        order = np.lexsort((item, -score, rank, user))
    elif rank is not None:
        order = np.lexsort((item, rank, user))
    else:
        order = np.lexsort((item, -score, user))
    user, item = user[order], item[order]
    starts, lengths = _user_runs(user)
    position = np.arange(user.size) - np.repeat(starts, lengths) + 1
    if rank is not None and score is not None:
        score, rank = score[order], rank[order]
        rises = np.zeros(user.size, dtype=bool)
        rises[1:] = (score[1:] > score[:-1]) & (user[1:] == user[:-1])
        if rises.any():
            at = int(np.flatnonzero(rises)[0])
            raw_u, raw_i = raw_user[order], raw_item[order]
            raise ListsError(
                f"{source}: rank and score order the items of {np.unique(user[rises]).size:,} "
                f"user(s) differently, e.g. user {format_ids(raw_u[[at]])}: item "
                f"{format_ids(raw_i[[at]])} at rank {rank[at]:g} has score {score[at]:g}, "
                f"above {score[at - 1]:g} of item {format_ids(raw_i[[at - 1]])} at rank "
                f"{rank[at - 1]:g}; give one of them, or scores that fall as the rank grows"
            )
    elif score is not None:
        score = score[order]
    keep = position <= depth if depth is not None else np.ones(user.size, dtype=bool)
    position = position[keep]
    rank_type = np.int16 if position.size == 0 or position.max() <= _RANK_MAX else np.int32
    recs = pd.DataFrame(
        {
            "user": user[keep].astype(np.int32),
            "item": item[keep].astype(np.int32),
            "rank": position.astype(rank_type),
            "score": (-position if score is None else score[keep]).astype(np.float32),
        }
    )
    return recs, warnings_


def _candidates(train: pd.DataFrame, n_users: int, n_items: int) -> np.ndarray:
    """Each user's number of candidate items: the items without a training pair."""
    keys = np.unique(
        _keys(train["user"].to_numpy(np.int64), train["item"].to_numpy(np.int64), n_items)
    )
    return n_items - np.bincount(keys // n_items, minlength=n_users)


def short_lists_warning(
    recs: pd.DataFrame, train: pd.DataFrame, *, n_users: int, n_items: int, k: int, source: str
) -> str | None:
    """A message when some users' lists hold fewer than ``k`` items (or than their candidate
    items, if fewer): their missing ranks count as misses. None when no list is short."""
    length = np.bincount(recs["user"].to_numpy(np.int64), minlength=n_users)
    short = length < np.minimum(k, _candidates(train, n_users, n_items))
    if not short.any():
        return None
    none = int((short & (length == 0)).sum())
    listed = length[short & (length > 0)]
    shortest = f"; the shortest list has {int(listed.min()):,} item(s)" if listed.size else ""
    return (
        f"{source}: the lists of {int(short.sum()):,} of {n_users:,} users are shorter than "
        f"k = {k} ({none:,} user(s) have no list{shortest}): their missing ranks count as "
        f"misses in metrics@{k}"
    )


# --------------------------------------------------------------------------- E5


def check_depth(
    recs: pd.DataFrame,
    train: pd.DataFrame,
    evaluated: np.ndarray,
    ks: Sequence[int],
    *,
    n_users: int,
    n_items: int,
    source: str,
) -> None:
    """Refuse a K for which some ``evaluated`` user's list is shorter than K (and than the
    user's candidate items): Recall@K needs the top K of every candidate, which the list
    does not give (E5, [URE24]). Raises :class:`ListsError` naming the smallest such K."""
    length = np.bincount(recs["user"].to_numpy(np.int64), minlength=n_users)
    candidates = _candidates(train, n_users, n_items)
    users = np.unique(np.asarray(evaluated, dtype=np.int64))
    for k in sorted(ks):
        short = length[users] < np.minimum(k, candidates[users])
        if short.any():
            cut = users[length[users] < candidates[users]]
            most = int(length[cut].min())
            raise ListsError(
                f"{source}: Recall@{k} needs every evaluated user's top {k}, but the lists of "
                f"{int(short.sum()):,} of {users.size:,} evaluated users are shorter (as short "
                f"as {int(length[users][short].min()):,} items): remove the Ks above {most} "
                "from e5.ks, or give longer lists"
            )


def traditional_decided(
    recs: pd.DataFrame,
    train: pd.DataFrame,
    exposed: pd.DataFrame,
    ks: Sequence[int],
    *,
    n_items: int,
) -> pd.DataFrame:
    """Whether the lists decide the traditional Recall@K of each user with exposed pairs.

    The traditional estimate ranks the user's randomly exposed items R_u (those that
    are candidates) and takes its top K: all of R_u when |R_u| <= K, else the first K
    listed ones, which needs at least K of R_u in the list; with fewer, unlisted items,
    whose order is unknown, enter it.
    Returns ``user``, ``k`` and ``decided`` (bool), one row per user of ``exposed`` and K.
    """
    keys = np.unique(
        _keys(exposed["user"].to_numpy(np.int64), exposed["item"].to_numpy(np.int64), n_items)
    )
    train_keys = _keys(train["user"].to_numpy(np.int64), train["item"].to_numpy(np.int64), n_items)
    keys = keys[~np.isin(keys, train_keys)]
    listed = np.isin(keys, _keys(recs["user"].to_numpy(), recs["item"].to_numpy(), n_items))
    users, first = np.unique(keys // n_items, return_index=True)
    size = np.diff(np.append(first, keys.size))
    held = np.add.reduceat(listed.astype(np.int64), first) if keys.size else size
    k = np.asarray(list(ks), dtype=np.int64)
    decided = (size[:, None] <= k[None, :]) | (held[:, None] >= k[None, :])
    return pd.DataFrame(
        {
            "user": np.repeat(users, k.size).astype(np.int32),
            "k": np.tile(k, users.size).astype(np.int16),
            "decided": decided.ravel(),
        }
    )


class ListScores:
    """Scores that order every user's items as the lists do, for the estimators that score
    all items (:func:`debiaseval.evaluation.ure.recall_estimates`).

    A listed item scores ``L + 1 - rank`` (L = the longest list), every other item 0:
    below every listed item, tied with the other unlisted ones (ties by the smaller
    item id, as everywhere). Only the order within the first min(K, list length) items
    is known; :func:`check_depth` keeps the Ks within it.
    """

    def __init__(self, recs: pd.DataFrame, n_users: int, n_items: int) -> None:
        rank = recs["rank"].to_numpy(np.int64)
        top = int(rank.max()) if rank.size else 0
        self.matrix_ = sp.csr_matrix(
            (
                (top + 1 - rank).astype(np.float64),
                (recs["user"].to_numpy(np.int64), recs["item"].to_numpy(np.int64)),
            ),
            shape=(n_users, n_items),
        )

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense float64 scores of ``users`` over every item."""
        return self.matrix_[np.asarray(users, dtype=np.int64)].toarray()


def seed_lists(
    lists: pd.DataFrame,
    train: pd.DataFrame,
    *,
    depth: int,
    source: str,
    **options: Any,
) -> tuple[pd.DataFrame, list[str]]:
    """Precomputed lists of one seed as a model's top-``depth`` lists: checked against the
    seed's ``train`` part by :func:`prepare_lists` (unknown ids, duplicated pairs, training
    items, rank vs score; ``options``: its ``n_users``, ``n_items``, ``users``, ``items``,
    ``ids``, ``on_train_items`` and ``where``) and cut at ``depth``. Returns them and the
    warnings: dropped training items, lists shorter than ``depth`` (:func:`short_lists_warning`)."""
    recs, notes = prepare_lists(lists, train=train, depth=depth, source=source, **options)
    short = short_lists_warning(
        recs, train, n_users=options["n_users"], n_items=options["n_items"], k=depth, source=source
    )
    return recs, notes + ([short] if short else [])
