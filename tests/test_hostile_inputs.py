"""Hostile inputs and faults, one table per kind: each input gives one line saying what is
wrong, and nothing is written or lost (issue 24). Servers listen on 127.0.0.1 only; the
privilege tests drop root's file-permission override with setpriv, and skip where they can't."""

from __future__ import annotations

import http.server
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import yaml
from conftest import make_workdir

from debiaseval.data import SOURCES, DatasetError, DatasetSource
from debiaseval.data.download import (
    DownloadLimits,
    _check_url,
    download_file,
    fetch_dataset,
    safe_extract,
)
from debiaseval.data.user_logs import load_user_log
from debiaseval.evaluation.external_lists import (
    ListsError,
    lists_of_seed,
    missing_lists,
    prepare_lists,
)
from debiaseval.io.errors import ConfigError
from debiaseval.io.files import damage_of, output_damage, write_parquet
from debiaseval.recommenders.registry import PLUGIN_PATHS_ENV, ContractError, resolve_recommender
from debiaseval.workflow.config import synthetic_memory, validate_config

ROOT = Path(__file__).resolve().parents[1]
TINY = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (to show that nothing was written or lost)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _one_line(error: BaseException, expected: str) -> None:
    text = str(error)
    assert "\n" not in text, text
    assert expected in text, text


# --------------------------------------------------------------------------- config (5)

CONFIG_CASES = [
    ({"e1": {"rho": ".nan"}}, "config error at 'e1.rho': got nan; expected a finite number"),
    ({"e1": {"rho": float("nan")}}, "config error at 'e1.rho': got nan; expected a finite number"),
    (
        {"synthetic": {"noise": ".inf"}},
        "config error at 'synthetic.noise': got inf; expected a finite number",
    ),
    (
        {"e4": {"grid": {"l2": [1.0, float("-inf")]}}},
        "config error at 'e4.grid.l2.1': got -inf; expected a finite number",
    ),
    (
        {"synthetic": {"marginal": [0, 0, 0, 0, 0]}},
        "config error at 'synthetic.marginal': every "
        "share is 0; expected the shares of ratings 1..5, at least one of them positive",
    ),
    (
        {"semisynthetic": {"marginal": [0, 0, 0, 0, 0]}},
        "config error at 'semisynthetic.marginal': every share is 0",
    ),
    (
        {"e1": {"ks": [10, 40000]}},
        "config error at 'e1.ks.1': 40000 is beyond the ranking's "
        "limit; expected a cut-off in [1, 32767]",
    ),
    (
        {"synthetic": {"n_users": 1_000_000_000}},
        "config error at 'synthetic': 1,000,000,000 users × 400 items need about ",
    ),
    (
        {"synthetic": {"n_items": 100}, "e5": {"exposure": {"n_exposed": 100}}},
        "config error at "
        "'e5.exposure.n_exposed': 100 exposed items leave none unexposed on "
        "synthetic (100 items, 10 "
        "of them a user's training set), so the true recall is undefined; expected at most 89",
    ),
    (
        {"synthetic": {"n_mar": 500}},
        "config error at 'synthetic.n_mar': 500 MAR ratings per user, "
        "more than the 400 items; expected at most synthetic.n_items",
    ),
    (
        {"download": {"deadline": 0}},
        "config error at 'download.deadline': 0 is less than or equal to the minimum of 0",
    ),
    # the second audit (issue 35, items 6 and 7)
    (
        {"seeds": 10000},
        "config error at 'seeds': 10,000 seeds; expected at most 1,000: Snakemake "
        "plans every job before the first runs, and on the default study 10,000 seeds are about "
        "280,000 jobs, 15 min and 7.8 GiB of planning alone",
    ),
    ({"e2": {"seeds": 1001}}, "config error at 'e2.seeds': 1,001 seeds; expected at most 1,000"),
    (
        {"e1": {"bootstrap": {"resamples": 1_000_000_000}}},
        "config error at "
        "'e1.bootstrap.resamples': 1,000,000,000 resamples keep 7.5 GiB of means per column of the "
        "table they bound",
    ),
    (
        {"e5": {"bootstrap": {"resamples": 100_001}}},
        "config error at 'e5.bootstrap.resamples': "
        "100,001 resamples keep 1 MiB of means per column",
    ),
    ({"e6": {"resamples": 10**6}}, "config error at 'e6.resamples': 1,000,000 resamples"),
    ({"e6": {"level": 0.9}}, "config error at 'e6.level': renamed to 'e6.confidence'"),
    ({"e6": {"n_boot": 100}}, "config error at 'e6.n_boot': renamed to 'e6.resamples'"),
    (
        {"e2": {"alpha": 0.05}},
        "config error at 'e2.alpha': renamed to 'e2.confidence' (= 1 - alpha)",
    ),
    ({"e1": {"scoreboard": {"resamples": 10**6}}}, "config error at 'e1.scoreboard.resamples'"),
    (
        {
            "e1": {
                "estimators": {"S": {"estimator": "snips", "propensity": "popularity", "clip": 1.5}}
            }
        },
        "config error at 'e1.estimators.S.clip': 1.5 is greater than the maximum of 1",
    ),
    (
        {
            "e1": {
                "estimators": {
                    "S": {"estimator": "snips", "propensity": "popularity", "smoothing": 0}
                }
            }
        },
        "config error at 'e1.estimators.S.smoothing': 0 is less than or equal to the minimum of 0",
    ),
    ({"study": "null"}, "config error at 'study': 'null' is YAML's null written as a name"),
]


@pytest.mark.parametrize(("config", "message"), CONFIG_CASES)
def test_config_refuses_at_once_what_a_job_would_fail_on(config, message):
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    _one_line(error.value, message)


def test_the_limits_leave_valid_configs_alone():
    assert validate_config({"e1": {"ks": [32767]}})["e1"]["ks"] == [32767]
    config = validate_config({"seeds": 1000, "e1": {"bootstrap": {"resamples": 100_000}}})
    assert (config["seeds"], config["e1"]["bootstrap"]["resamples"]) == (1000, 100_000)
    # a block no experiment runs is not checked
    validate_config({"experiments": ["e1"], "e6": {"resamples": 10**6}})
    # YAML 1.1 (Snakemake's reader) takes 1e-300 for a string; YAML 1.2 and we take a number
    clip = {"S": {"estimator": "snips", "propensity": "popularity", "clip": "1e-300"}}
    config = validate_config({"e1": {"rho": "1e-3", "estimators": clip}})
    assert (config["e1"]["rho"], config["e1"]["estimators"]["S"]["clip"]) == (1e-3, 1e-300)
    assert validate_config({"study": 2024})["study"] == "2024"  # a number-like name
    config = validate_config({"synthetic": {"n_items": 100}, "e5": {"exposure": {"n_exposed": 89}}})
    assert config["download"] == {"deadline": 1800, "max_mb": 1024, "max_extracted_mb": 4096}
    # a huge synthetic block that no experiment uses is not estimated
    validate_config({"synthetic": {"n_users": 10**9}, "datasets": ["coat"], "experiments": ["e3"]})


def test_the_synthetic_estimate_covers_what_generation_allocates():
    """The estimate is at least the peak tracemalloc sees (numpy reports its buffers)."""
    import tracemalloc

    from debiaseval.data.synthetic_dataset import synthetic_raw

    block = {**validate_config({})["synthetic"], "n_users": 3000, "n_items": 500}
    tracemalloc.start()
    synthetic_raw(**block)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= synthetic_memory(block) <= 3 * peak


def test_an_exposure_that_leaves_nothing_unexposed_stops_its_job_in_one_line():
    """KuaiRec has its size in its files only: the exposure job says it, in one line."""
    from debiaseval.data.exposure import simulate_exposure

    users, items = np.indices((4, 10)).reshape(2, -1)
    full = pd.DataFrame({"user": users, "item": items, "rating": 1.0})
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError) as error:
        simulate_exposure(full, np.ones(10), train_fraction=0.2, n_exposed=8, rng=rng)
    _one_line(
        error.value,
        "config error at 'e5.exposure.n_exposed': 8 leaves no pair unexposed (a user has at most "
        "8 items besides the training ones), so the true recall is undefined; expected at most 7",
    )
    simulate_exposure(full, np.ones(10), train_fraction=0.2, n_exposed=7, rng=rng)


def test_the_ranking_limit_is_the_ranking_s():
    from debiaseval.recommenders import make_recommender
    from debiaseval.recommenders.ranking import top_k
    from debiaseval.workflow.config import RANK_LIMIT

    train = sp.csr_matrix(np.eye(3))
    model = make_recommender("pospop").fit(train, seed=0)
    with pytest.raises(ValueError, match=str(RANK_LIMIT)):
        top_k(model, train, RANK_LIMIT + 1)


# --------------------------------------------------------------------------- lists (3)

# users' raw ids 2, 0, 1 and items' 4, 3, 2, 1, 0: integers that also read as project ids
USERS = pd.DataFrame({"user": np.arange(3, dtype=np.int32), "raw_user": [2, 0, 1]})
ITEMS = pd.DataFrame({"item": np.arange(5, dtype=np.int32), "raw_item": [4, 3, 2, 1, 0]})
TRAIN = pd.DataFrame({"user": [0, 0, 2], "item": [0, 1, 4]})


def _lists(**columns) -> pd.DataFrame:
    return pd.DataFrame({"user": [2, 2, 0], "item": [2, 1, 0], **columns})


LISTS_CASES = [
    (
        _lists(rank=[-1, -2, -1]),
        {},
        "lists.csv: column rank has 3 value(s) that are not positive "
        "integers, e.g. -1, -2; expected 1 for a user's best item, then 2, 3, ...",
    ),
    (
        _lists(rank=[1.5, 2, 1]),
        {},
        "lists.csv: column rank has 1 value(s) that are not positive integers, e.g. 1.5",
    ),
    (
        _lists(rank=[1, 1, 1]),
        {},
        "lists.csv: 1 rank(s) repeated within the lists of 1 user(s), "
        "e.g. user 2: rank 1 given to items 2 and 1; expected each item of a user's list its own "
        "rank",
    ),
    (
        _lists(rank=[1, 2, 1], score=[0.1, 0.9, 1.0]),
        {},
        "lists.csv: rank and score order the items of 1 user(s) differently",
    ),
    (
        _lists(score=[3, 2, 1]),
        {"ids": "internal", "on_train_items": "drop"},
        "lists.csv: the "
        "lists are read with ids: internal, but they look like the dataset's raw ids: as the "
        "project's ids 1 of 3 listed pairs are training pairs, as raw ids every id is known and no "
        "pair is a training pair; set ids: raw (at e1.recommenders.X)",
    ),
]


@pytest.mark.parametrize(("lists", "options", "message"), LISTS_CASES)
def test_lists_are_refused_with_one_line(lists, options, message):
    kwargs = {"train": TRAIN, "n_users": 3, "n_items": 5, "users": USERS, "items": ITEMS}
    with pytest.raises(ListsError) as error:
        prepare_lists(lists, **kwargs, **options, source="lists.csv", where="e1.recommenders.X")
    _one_line(error.value, message)


def test_the_same_lists_in_raw_ids_are_accepted():
    kwargs = {"train": TRAIN, "n_users": 3, "n_items": 5, "users": USERS, "items": ITEMS}
    recs, notes = prepare_lists(_lists(score=[3, 2, 1]), **kwargs, source="lists.csv")
    assert notes == [] and recs["item"].tolist() == [2, 3, 4]


def test_a_lists_path_that_is_a_folder_says_so(tmp_path):
    (tmp_path / "coat" / "seed0.parquet").mkdir(parents=True)
    template = str(tmp_path / "{dataset}" / "seed{seed}.parquet")
    spec = {"recs": template}
    with pytest.raises(ListsError) as error:
        lists_of_seed(spec, name="X", where="e1.recommenders.X", dataset="coat", seed=0)
    _one_line(
        error.value,
        f"e1.recommenders.X.recs: {tmp_path}/coat/seed0.parquet is a folder, not a lists file "
        "(the lists of seed 0 on coat); expected a Parquet or CSV file",
    )
    line = missing_lists(template, where="e1.recommenders.X", datasets=["coat"], seeds=[0])
    assert line is not None and "lists paths are folders, not files" in line


# --------------------------------------------------------------------------- plugins (4)

PLUGIN = """
import numpy as np
import scipy.sparse as sp

from debiaseval.recommenders import Recommender


class Odd(Recommender):
    name = "odd"

    def __init__(self, *, kind: str = "ok") -> None:
        self.kind = kind

    def _fit(self, train, seed):
        self.seen_ = True

    def _score(self, users):
        n, m = users.size, self.n_items_
        return {
            "transposed": lambda: np.zeros((m, n)),
            "short": lambda: np.zeros((n, m - 1)),
            "complex": lambda: np.zeros((n, m), dtype=complex),
            "strings": lambda: np.full((n, m), "1.5"),
            "objects": lambda: np.full((n, m), None, dtype=object),
            "sparse": lambda: sp.csr_matrix((n, m)),
            "sparse_wrong": lambda: sp.csr_matrix((m, n)),
            "list": lambda: [[0.0] * m] * n,
        }[self.kind]()
"""


@pytest.fixture
def plugin_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(PLUGIN_PATHS_ENV, raising=False)
    folder = tmp_path / "plugins"
    folder.mkdir()
    yield folder
    for name in ("oddmodels", "exits", "interrupts"):
        sys.modules.pop(name, None)


SCORE_CASES = [
    (
        "transposed",
        "oddmodels.Odd._score() returned shape (4, 3) (transposed?) (dtype float64); "
        "expected a float64 array of shape (3, 4) (users × items)",
    ),
    (
        "short",
        "oddmodels.Odd._score() returned shape (3, 3) (dtype float64); expected a float64 "
        "array of shape (3, 4) (users × items)",
    ),
    (
        "complex",
        "oddmodels.Odd._score() returned dtype complex128 (shape (3, 4)); expected a "
        "float64 array of shape (3, 4) (users × items)",
    ),
    ("strings", "oddmodels.Odd._score() returned dtype <U3 (shape (3, 4)); expected"),
    ("objects", "oddmodels.Odd._score() returned dtype object (shape (3, 4)); expected"),
    (
        "sparse_wrong",
        "oddmodels.Odd._score() returned a sparse matrix of shape (4, 3); expected "
        "a float64 array of shape (3, 4) (users × items)",
    ),
]


@pytest.mark.parametrize(("kind", "message"), SCORE_CASES)
def test_a_plugin_s_scores_are_checked_in_one_line(plugin_folder, kind, message):
    (plugin_folder / "oddmodels.py").write_text(PLUGIN)
    validate_config({"plugin_paths": [str(plugin_folder)]})
    model = resolve_recommender("oddmodels:Odd")(kind=kind).fit(sp.csr_matrix(np.ones((3, 4))))
    with pytest.raises(ContractError) as error:
        model.score(np.arange(3))
    _one_line(error.value, message)


@pytest.mark.parametrize("kind", ["sparse", "list"])
def test_sparse_and_nested_list_scores_become_dense_float64(plugin_folder, kind):
    (plugin_folder / "oddmodels.py").write_text(PLUGIN)
    validate_config({"plugin_paths": [str(plugin_folder)]})
    model = resolve_recommender("oddmodels:Odd")(kind=kind).fit(sp.csr_matrix(np.ones((3, 4))))
    scores = model.score(np.arange(3))
    assert type(scores) is np.ndarray and scores.dtype == np.float64 and scores.shape == (3, 4)


IMPORT_CASES = [
    (
        "exits",
        "import sys\nsys.exit(3)\n",
        "config error at 'e1.recommenders.P.algorithm': cannot "
        "import 'exits:Odd': importing module 'exits' raised SystemExit(3); a "
        "plugin module must not "
        "exit or stop the process when imported",
    ),
    (
        "interrupts",
        "raise KeyboardInterrupt\n",
        "config error at 'e1.recommenders.P.algorithm': "
        "cannot import 'interrupts:Odd': importing module 'interrupts' raised KeyboardInterrupt;",
    ),
    # what no except catches: the second audit's os._exit(0) ended snakemake with status 0
    (
        "quits",
        "import os\nos._exit(0)\n",
        "config error at 'e1.recommenders.P.algorithm': "
        "cannot import 'quits:Odd': importing module 'quits' ended the process (exit status 0) "
        "before the import finished; a plugin module must not exit or stop the process when "
        "imported",
    ),
    (
        "kills",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "cannot import "
        "'kills:Odd': importing module 'kills' ended the process (signal "
        "SIGKILL) before the import "
        "finished",
    ),
]


@pytest.mark.parametrize(("module", "source", "message"), IMPORT_CASES)
def test_a_plugin_that_exits_on_import_is_a_config_error(plugin_folder, module, source, message):
    (plugin_folder / f"{module}.py").write_text(source)
    config = {
        "plugin_paths": [str(plugin_folder)],
        "e1": {"recommenders": {"P": {"algorithm": f"{module}:Odd"}}},
    }
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    _one_line(error.value, message)


def test_a_plugin_module_is_probed_once_per_run(plugin_folder, monkeypatch):
    """The modules that passed are kept in DEBIASEVAL_PROBED_PLUGINS, which job processes
    inherit: a second resolution, or a job's, starts no child Python."""
    from debiaseval.recommenders import registry

    (plugin_folder / "probedonce.py").write_text("x = 1\n")
    monkeypatch.setenv(registry.PROBED_ENV, "")
    validate_config({"plugin_paths": [str(plugin_folder)]})
    registry.probe_import("probedonce")
    (entry,) = os.environ[registry.PROBED_ENV].split(os.pathsep)
    assert entry.startswith("probedonce=")  # bound to the code's digest (issue 43, case 3)

    def no_child(*args, **kwargs):
        raise AssertionError("probed twice")

    monkeypatch.setattr(registry, "run_bounded", no_child)
    registry.probe_import("probedonce")


# --------------------------------------------------------------------------- downloads (2)


class _Handler(http.server.BaseHTTPRequestHandler):
    """/redirect?to=URL redirects; /slow trickles a byte every 0.2 s, /slow-headers its
    headers so (each byte well within the per-read timeout); /big sends 3 MB."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", self.path.removeprefix("/redirect?to="))
            self.end_headers()
        elif self.path == "/slow.zip":
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(200):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
        elif self.path == "/slow-headers.zip":
            self.send_response(200)
            self.flush_headers()
            try:
                for _ in range(200):  # "X-Drip: xxxx..." one byte at a time, never ended
                    self.wfile.write(b"X-Drip: " if _ == 0 else b"x")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
        elif self.path in ("/big.zip", "/unannounced.zip"):
            self.send_response(200)
            if self.path == "/big.zip":
                self.send_header("Content-Length", str(3 * 2**20))
            self.end_headers()
            try:
                self.wfile.write(b"\0" * 3 * 2**20)
            except OSError:
                pass
        elif self.path.endswith("/.."):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(_zip([("toy/ratings.txt", b"1 2 3\n")]))
        else:
            self.send_response(404)
            self.end_headers()


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


TIGHT = DownloadLimits(deadline=1.0, max_mb=1.0, max_extracted_mb=1.0)
DOWNLOAD_CASES = [
    (
        "/redirect?to=http://example.invalid/coat.zip",
        "refusing to download a redirect from "
        "{base}/redirect?to=http://example.invalid/coat.zip to "
        "http://example.invalid/coat.zip: only "
        "https:// (and file:// or http://127.0.0.1 as the URL asked for) are allowed",
    ),
    (
        "/redirect?to=file:///etc/passwd",
        "refusing to download a redirect from "
        "{base}/redirect?to=file:///etc/passwd to file:///etc/passwd",
    ),
    ("/slow.zip", "cannot download {base}/slow.zip: not done within download.deadline = 1 s"),
    (
        "/slow-headers.zip",
        "cannot download {base}/slow-headers.zip: not done within download.deadline = 1 s",
    ),
    ("/big.zip", "refusing {base}/big.zip: it announces 3.0 MB, more than download.max_mb = 1"),
    (
        "/unannounced.zip",
        "refusing {base}/unannounced.zip: more than download.max_mb = 1 MB downloaded",
    ),
]


@pytest.mark.parametrize(("path", "message"), DOWNLOAD_CASES)
def test_a_hostile_server_gets_one_line_and_leaves_nothing(server, tmp_path, path, message):
    started = time.monotonic()
    with pytest.raises(DatasetError) as error:
        download_file(server + path, tmp_path / "coat.zip", sha256=None, limits=TIGHT)
    _one_line(error.value, message.format(base=server))
    assert time.monotonic() - started < 5  # the deadline is 1 s, each byte comes within 0.2 s
    assert _files(tmp_path) == {}


def test_a_redirect_from_https_may_not_leave_it():
    with pytest.raises(DatasetError) as error:
        _check_url("http://127.0.0.1/coat.zip", after="https://example.org/coat.zip")
    _one_line(
        error.value,
        "refusing a redirect from https://example.org/coat.zip to http://127.0.0.1/coat.zip: a "
        "download that starts on https:// stays on it",
    )


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(zipfile.ZipInfo(name), data, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


ARCHIVE_CASES = [
    (
        [("coat/a.txt", b"1"), ("coat/a.txt/", b"")],
        "unsafe archive {archive}: member 'coat/a.txt/'"
        ": a second member of the same name (which one would be kept?)",
    ),
    ([("coat/a.txt", b"1"), ("coat/b.txt", b"2")], None),
    (
        [("coat/zeros.bin", b"\0" * (2 * 2**20))],
        "refusing {archive}: it expands to more than download.max_extracted_mb = 1 MB",
    ),
    ("damaged", "cannot extract {archive}: "),
]


@pytest.mark.parametrize(("members", "message"), ARCHIVE_CASES)
def test_an_odd_archive_is_a_dataset_error(tmp_path, members, message):
    archive = tmp_path / "coat.zip"
    if members == "damaged":
        whole = _zip([("coat/a.txt", b"1" * 5000)])
        archive.write_bytes(whole[:42] + b"\xff" * 8 + whole[50:])  # the deflated data
    else:
        archive.write_bytes(_zip(members))
    if message is None:
        safe_extract(archive, tmp_path / "out", limits=TIGHT)
        return
    with pytest.raises(DatasetError) as error:
        safe_extract(archive, tmp_path / "out", limits=TIGHT)
    _one_line(error.value, message.format(archive=archive))


@pytest.fixture
def toy(monkeypatch):
    source = DatasetSource(
        name="toy",
        url=None,
        archive_sha256=None,
        archive_root="toy",
        files={"ratings.txt": ()},
        licence="test",
        citation="test",
    )
    monkeypatch.setitem(SOURCES, "toy", source)
    monkeypatch.delenv("DEBIASEVAL_MIRROR", raising=False)
    return source


def test_a_url_ending_in_dot_dot_is_a_dataset_error(server, tmp_path, toy):
    with pytest.raises(DatasetError) as error:
        fetch_dataset("toy", tmp_path / "raw" / "toy", url=f"{server}/a/..")
    _one_line(error.value, f"toy: refusing {server}/a/..: its path has a '..' part; give the ")
    assert _files(tmp_path) == {}


STAGING_SCRIPT = """
import sys
from pathlib import Path
from debiaseval.data import SOURCES, DatasetSource
from debiaseval.data.download import fetch_dataset

SOURCES["toy"] = DatasetSource(name="toy", url=None, archive_sha256=None, archive_root="toy",
                               files={"ratings.txt": ()}, licence="test", citation="test")
fetch_dataset("toy", Path(sys.argv[1]), url=sys.argv[2])
"""


def _staging(raw: Path) -> list[str]:
    return sorted(p.name for p in raw.glob(".toy.*.tmp")) if raw.is_dir() else []


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_staging_folders_do_not_outlive_a_stopped_download(server, tmp_path, toy, how):
    raw = tmp_path / "raw"
    process = subprocess.Popen(
        [sys.executable, "-c", STAGING_SCRIPT, str(raw / "toy"), f"{server}/slow.zip"],
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not _staging(raw):
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(how)
    process.wait(timeout=60)
    process.stderr.close()
    if how == signal.SIGKILL:  # nothing can clean up after kill -9: the next fetch does
        assert len(_staging(raw)) == 1
        with pytest.raises(DatasetError):
            fetch_dataset("toy", raw / "toy", url=f"{server}/missing.zip")
    assert _staging(raw) == [] and not (raw / "toy").exists()


# --------------------------------------------------------------------------- own data (6)


def _own(tmp_path: Path, name: str, frame_or_text) -> dict:
    path = tmp_path / name
    if isinstance(frame_or_text, str):
        path.write_text(frame_or_text)
    else:
        frame_or_text.to_parquet(path)
    config = {
        "sources": {
            "mylog": {
                "ratings": str(path),
                "columns": {"user": "uid", "item": "iid", "rating": "stars"},
            }
        }
    }
    return validate_config(config)["sources"]["mylog"]


OWN_CASES = [
    (
        "r.csv",
        'uid,iid,stars,note\na,x,4,"two\nlines"\nb,y,oops,\n',
        "r.csv: line 4: expected a numeric rating in column 'stars', got 'oops'",
    ),
    (
        "r.csv",
        'uid,iid,stars\n"a\n\nb",x,4\nb,y,3\n"a\n\nb",x,5\n',
        "r.csv: line 6: duplicate (user, item) pair ('a\\n\\nb', 'x') first seen on line 2",
    ),
    (
        "r.parquet",
        pd.DataFrame({"uid": [1, 2], "iid": [1, 2], "stars": [4.0, np.nan]}),
        "r.parquet: row 2: expected a numeric rating in column 'stars', got NaN",
    ),
]


@pytest.mark.parametrize(("name", "content", "message"), OWN_CASES)
def test_own_data_errors_name_the_right_line_and_value(tmp_path, name, content, message):
    spec = _own(tmp_path, name, content)
    with pytest.raises(DatasetError) as error:
        load_user_log("mylog", spec)
    _one_line(error.value, message)


# --------------------------------------------------------------------------- outputs (1, 6)


def _parquet(path: Path) -> Path:
    write_parquet(pd.DataFrame({"a": range(50)}), path)
    return path


def _damaged(folder: Path) -> dict[str, str]:
    """Damaged outputs of each kind the workflow writes, with the reason each gets."""
    whole = _parquet(folder / "whole.parquet").read_bytes()
    (folder / "half.parquet").write_bytes(whole[: len(whole) // 2])
    (folder / "long.parquet").write_bytes(whole[:-6] + b"PAR1")  # footer length wrong
    (folder / "tail.parquet").write_bytes(whole[:-30] + b"\xff" * 22 + whole[-8:])
    (folder / "t.md").write_text("| a |\n|---|\n| 1")
    (folder / "e.md").write_bytes(b"")
    (folder / "bin.md").write_bytes(b"| \xff |\n")
    (folder / "f.svg").write_text("<svg>...")
    (folder / "f.html").write_text("<html><body>")
    (folder / "f.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 20)
    (folder / "ok.md").write_text("| a |\n")
    (folder / "ok.svg").write_text("<svg></svg>\n")
    (folder / "notes.txt").write_text("")  # not an output kind we can judge
    return {
        "bin.md": "not UTF-8 text (byte 2)",
        "e.md": "empty",
        "f.html": "does not end with </html> (truncated?)",
        "f.png": "PNG does not end with its IEND chunk (truncated?)",
        "f.svg": "does not end with </svg> (truncated?)",
        "half.parquet": "Parquet magic bytes not found at the end (truncated?)",
        "long.parquet": "footer of ",
        "t.md": "does not end with a line break (truncated?)",
        "tail.parquet": "footer does not parse",
    }


def test_every_kind_of_damaged_output_is_found_and_nothing_changes(tmp_path):
    expected = _damaged(tmp_path)
    before = _files(tmp_path)
    found = output_damage(tmp_path)
    assert [p.name for p, _ in found.damaged] == sorted(expected)
    for path, reason in found.damaged:
        assert reason.startswith(expected[path.name]), (path, reason)
    assert found.unreadable == [] and _files(tmp_path) == before
    assert damage_of(tmp_path / "whole.parquet") is None


def _can_drop_privileges(tmp_path: Path) -> str | None:
    """Why privileges cannot be dropped here (None when setpriv can drop them)."""
    if shutil.which("setpriv") is None:
        return "setpriv is not installed"
    probe = tmp_path / "probe"
    probe.write_text("x")
    probe.chmod(0)
    result = subprocess.run(
        [*SETPRIV, "cat", str(probe)], capture_output=True, text=True, timeout=60, check=False
    )
    probe.chmod(0o600)
    if result.returncode == 0:
        return "the file was read anyway (setpriv could not drop the override)"
    return None if "Permission denied" in result.stderr else f"setpriv failed: {result.stderr}"


SETPRIV = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


@pytest.fixture
def unprivileged(tmp_path) -> list[str]:
    """The command prefix that runs a process without the override of file permissions."""
    if os.geteuid() != 0:
        return []  # already without it
    reason = _can_drop_privileges(tmp_path)
    if reason is not None:
        pytest.skip(f"cannot drop the privilege to override file permissions: {reason}")
    return SETPRIV


def test_an_unreadable_output_is_reported_never_taken_for_damage(tmp_path, unprivileged):
    path = _parquet(tmp_path / "results" / "split.parquet")
    path.chmod(0)
    script = (
        "import sys; from debiaseval.io.files import output_damage; "
        "d = output_damage(sys.argv[1]); print(d.damaged, d.unreadable)"
    )
    result = subprocess.run(
        [*unprivileged, sys.executable, "-c", script, str(tmp_path / "results")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "[] [(PosixPath(" in result.stdout
    assert "'Permission denied [EACCES]')]" in result.stdout
    path.chmod(0o644)
    assert damage_of(path) is None


def test_a_read_only_subfolder_stops_the_set_aside_of_a_damaged_output_as_a_user(
    tmp_path, unprivileged
):
    """The second audit's repro, without root's override: a damaged split, the metrics made
    from it in a read-only folder. Once a PermissionError after three folders were removed;
    now one line, and every file where it was."""
    import base64
    import json

    split = _parquet(tmp_path / "results/e1/split.parquet")
    metrics = _parquet(tmp_path / "results/e1/ro/metrics.parquet")
    for output, inputs in ((split, []), (metrics, [split])):
        name = base64.urlsafe_b64encode(str(output.relative_to(tmp_path)).encode()).decode()
        record = tmp_path / ".snakemake/metadata" / name
        record.parent.mkdir(parents=True, exist_ok=True)
        listed = [str(p.relative_to(tmp_path)) for p in inputs]
        record.write_text(json.dumps({"rule": "r", "input": listed}))
    split.write_bytes(split.read_bytes()[:-1])
    before = _files(tmp_path / "results")
    metrics.parent.chmod(0o555)
    try:
        result = subprocess.run(
            [
                *unprivileged,
                sys.executable,
                "-c",
                "from debiaseval.workflow.repair import rebuild_damaged; "
                "print(rebuild_damaged('results', stamp='T')[1])",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    finally:
        metrics.parent.chmod(0o755)
    assert result.stdout.strip() == (
        "debiaseval: results/e1/ro/ is read-only for this user, so its damaged outputs cannot be "
        "set aside (nothing was moved or run); make it writable, then run again"
    )
    assert _files(tmp_path / "results") == before


# --------------------------------------------------------------------------- workflow (1)


def _snakemake(workdir: Path, *args: str, prefix: tuple[str, ...] = ()):
    return subprocess.run(
        [
            *prefix,
            sys.executable,
            "-m",
            "snakemake",
            "--configfile",
            "tiny.yaml",
            "--cores",
            "1",
            *args,
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


SPLIT = "results/tiny/e1/synthetic/seed0/split.parquet"
TESTSET = "results/tiny/e1/synthetic/seed0/testsets/REG.parquet"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A workflow whose E1 seed-0 split and test sets are built (the split's downstream)."""
    workdir = make_workdir(tmp_path_factory.mktemp("hostile") / "run")
    result = _snakemake(workdir, TESTSET)
    assert result.returncode == 0, result.stderr
    return workdir


def _results(workdir: Path) -> dict[str, bytes]:
    """:func:`_files` of the results, but what was set aside in ``.damaged/``."""
    return {p: b for p, b in _files(workdir / "results").items() if "/.damaged/" not in p}


@pytest.mark.slow
def test_a_damaged_intermediate_is_set_aside_and_rebuilt_and_a_dry_run_changes_nothing(
    finished, tmp_path
):
    workdir = tmp_path / "run"
    shutil.copytree(finished, workdir, symlinks=True)
    intact = _files(workdir / "results")
    split = workdir / SPLIT
    split.write_bytes(split.read_bytes()[:100])
    damaged = _files(workdir / "results")
    dry = _snakemake(workdir, "-n", TESTSET)
    assert dry.returncode == 0, dry.stderr
    assert "damaged" not in dry.stderr  # the check runs only for a command that runs jobs
    assert _files(workdir / "results") == damaged  # a dry run changes nothing
    run = _snakemake(workdir, TESTSET)  # the target itself is complete: only its input is damaged
    assert run.returncode == 0, run.stderr
    assert f"debiaseval: {SPLIT} is damaged (Parquet magic bytes not found at the end" in run.stderr
    assert (
        "debiaseval: moved 11 output(s), the damaged ones and those made from them, to "
        "results/tiny/.damaged/" in run.stderr
    )
    assert "rule e1_split:" in run.stdout + run.stderr
    assert "rule e1_intervene:" in run.stdout + run.stderr
    assert _results(workdir) == intact
    kept = [p for p in _files(workdir / "results") if "/.damaged/" in p]
    assert len(kept) == 11 and any(p.endswith("/e1/synthetic/seed0/split.parquet") for p in kept)
    assert "Nothing to be done" in _snakemake(workdir, "-n", TESTSET).stdout


@pytest.mark.slow
def test_no_command_deletes_a_users_files(finished, tmp_path):
    """The issue's repro, on a finished study with a user's own notes, page and figure and one
    damaged output: every informational command changes nothing at all; a real run sets the
    damaged output aside, rebuilds it, and leaves the user's files as they were."""
    workdir = tmp_path / "run"
    shutil.copytree(finished, workdir, symlinks=True)
    study = workdir / "results/tiny"
    own = {
        study / "notes.md": b"# notes",
        study / "analysis.html": b"<html></html><!-- mine -->",
        study / "e1/synthetic/figures/mine.png": b"\x89PNG but cut",
    }
    for path, data in own.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    split = workdir / SPLIT
    split.write_bytes(split.read_bytes()[:100])
    before = _files(workdir / "results")
    for args in (
        ("--list-rules",),
        ("--summary",),
        ("--lint",),
        ("--dag",),
        ("--unlock",),
        ("-n",),
        ("--report", "report.html"),
    ):
        result = _snakemake(workdir, *args)
        # each succeeds (--lint finds nothing), but a report of a study not yet aggregated
        assert result.returncode == 0 or args[0] == "--report", (args, result.stderr)
        assert "damaged" not in result.stderr and "moved" not in result.stderr, args
        assert _files(workdir / "results") == before, args
    run = _snakemake(workdir, TESTSET)
    assert run.returncode == 0, run.stderr
    assert all(path.read_bytes() == data for path, data in own.items())
    assert any(
        "/.damaged/" in p and p.endswith("seed0/split.parquet") for p in _files(workdir / "results")
    )


@pytest.mark.slow
def test_an_unreadable_result_is_named_and_kept_by_dry_and_real_runs(
    finished, tmp_path, unprivileged
):
    workdir = tmp_path / "run"
    shutil.copytree(finished, workdir, symlinks=True)
    split = workdir / SPLIT
    intact = split.read_bytes()
    if os.geteuid() == 0:
        os.chown(split, 65534, 65534)  # another user's file, mode 600 (the repro)
    split.chmod(0o600 if os.geteuid() == 0 else 0)
    for args in (("-n", TESTSET), (TESTSET,)):
        result = _snakemake(workdir, *args, prefix=tuple(unprivileged))
        named = (
            f"debiaseval: cannot read {SPLIT} (Permission denied [EACCES]): left as it is; fix its "
            "permissions or the file system, then run again"
        ) in result.stderr
        assert named == (args[0] != "-n"), result.stderr  # only a run that runs jobs checks
        assert "moved" not in result.stderr
        assert split.exists()
    split.chmod(0o644)
    assert split.read_bytes() == intact


@pytest.mark.slow
def test_a_read_only_results_folder_is_one_line(finished, tmp_path, unprivileged):
    workdir = tmp_path / "run"
    shutil.copytree(finished, workdir, symlinks=True)
    split = workdir / SPLIT
    split.write_bytes(split.read_bytes()[:100])
    (workdir / "results/tiny").chmod(0o555)  # the study's folder
    try:
        before = _files(workdir / "results")
        result = _snakemake(workdir, TESTSET, prefix=tuple(unprivileged))
        assert result.returncode != 0
        assert (
            "debiaseval: results/tiny/ is read-only for this user: no job can write its outputs "
            "(nothing was run); make results/tiny/ writable, or run in a copy of the workflow"
        ) in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
        assert _files(workdir / "results") == before
        dry = _snakemake(workdir, "-n", TESTSET, prefix=tuple(unprivileged))
        assert dry.returncode == 0 and "Traceback" not in dry.stderr
        assert _files(workdir / "results") == before
        # nothing damaged, but a job to run: stopped before it, with the same line
        other = _snakemake(
            workdir, "results/tiny/e1/synthetic/seed1/split.parquet", prefix=tuple(unprivileged)
        )
        assert other.returncode != 0
        assert "debiaseval: results/tiny/ is read-only for this user" in other.stderr, other.stderr
        assert _files(workdir / "results") == before
    finally:
        (workdir / "results/tiny").chmod(0o755)
