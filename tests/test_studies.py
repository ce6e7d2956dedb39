"""Studies: the name that puts a run's results, logs and benchmarks under their own folder, so
that two configs never overwrite each other's results (docs/getting-started.md#studies)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from debiaseval.io.errors import ConfigError
from debiaseval.workflow.config import study_name, validate_config
from debiaseval.workflow.studies import origin_conflict, record_origin, set_aside_foreign

# --------------------------------------------------------------------------- the name


def test_the_key_wins_then_the_last_configfile_stem_then_default():
    assert study_name("mine", ["config/paper.yaml"]) == "mine"
    assert study_name(None, ["config/paper.yaml", "tests/configs/tiny.yaml"]) == "tiny"
    assert study_name(None, [Path("/abs/coat-1seed.v2.yml")]) == "coat-1seed.v2"
    assert study_name(None, []) == "default"


@pytest.mark.parametrize("name", ["../up", "a/b", ".hidden", "", "with space", "x" * 65, "é"])
def test_a_name_that_is_not_a_safe_folder_is_one_line_naming_study(name):
    with pytest.raises(ConfigError) as info:
        study_name(name)
    message = str(info.value)
    assert message.startswith(f"config error at 'study': {name!r} is not a folder name: ")
    assert "\n" not in message


def test_an_unsafe_configfile_stem_says_where_the_name_came_from():
    expected = (
        r"^config error at 'study': 'my run' is not a folder name "
        r"\(the stem of --configfile my run\.yaml; set study instead\)"
    )
    with pytest.raises(ConfigError, match=expected):
        study_name(None, ["configs/my run.yaml"])


def test_validation_checks_the_key_and_defaults_it_to_null():
    assert validate_config({})["study"] is None
    assert validate_config({"study": "paper-rho0.4"})["study"] == "paper-rho0.4"
    with pytest.raises(ConfigError, match=r"^config error at 'study': '\.\./x' is not a folder"):
        validate_config({"study": "../x"})
    assert validate_config({"study": 3})["study"] == "3"  # --config study=3 passes an int
    for other in (3.5, True, [3]):
        with pytest.raises(ConfigError, match=r"^config error at 'study'"):
            validate_config({"study": other})


def test_a_study_records_the_file_that_named_it_and_refuses_another_of_that_name(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    folder = Path("results/t1")
    assert origin_conflict(folder, "t1", ["cfg/t1.yaml"]) is None  # nothing recorded yet
    record_origin(folder, "t1", ["base.yaml", "./cfg/t1.yaml"])
    record_origin(folder, "t1", ["cfg2/t1.yaml"])  # the first file stays recorded
    assert json.loads((folder / "study.json").read_text())["configfile"] == "cfg/t1.yaml"
    assert origin_conflict(folder, "t1", ["cfg/t1.yaml"]) is None
    assert origin_conflict(folder, "t1", [str(tmp_path / "cfg/t1.yaml")]) is None
    line = origin_conflict(folder, "t1", ["cfg2/t1.yaml"])
    assert line is not None and "\n" not in line
    assert "holds the results of cfg/t1.yaml, and cfg2/t1.yaml has the same name" in line
    assert origin_conflict(folder, "t1", []) is None
    (folder / "study.json").write_text("{not json")  # damaged: one line, never re-recorded
    line = origin_conflict(folder, "t1", ["cfg2/t1.yaml"])
    assert line is not None and "results/t1/study.json, the record of" in line
    record_origin(folder, "t1", ["cfg2/t1.yaml"])
    assert (folder / "study.json").read_text() == "{not json"


def test_results_of_another_config_are_named_or_set_aside(tmp_path, monkeypatch):
    """With Snakemake's record (a replaced config): named, Snakemake reruns them. Without (copied
    in): every unrecorded file of the folder moves to .foreign/, the recorded ones stay."""
    import base64

    import pandas as pd

    from debiaseval.workflow.provenance import config_hash, experiment_config, write_table

    monkeypatch.chdir(tmp_path)
    config = validate_config({"experiments": ["e3"]})
    other = validate_config({"experiments": ["e3"], "e3": {"alpha": 0.5}})
    record = {"experiment": "e3", "config_sha256": config_hash(experiment_config(other, "e3"))}
    frame = pd.DataFrame({"x": [1]})
    tables = [Path(f"results/s/e3/{d}/estimates.parquet") for d in ("copied", "replaced", "own")]
    for table in tables:
        table.parent.mkdir(parents=True)
        write_table(frame, table, record)
        (table.parent / "estimates.md").write_text("# E3\n")
    own = {**record, "config_sha256": config_hash(experiment_config(config, "e3"))}
    write_table(frame, tables[2], own)
    for made in (tables[1], tables[2], tables[1].parent / "estimates.md"):
        name = base64.urlsafe_b64encode(str(made).encode()).decode()
        Path(".snakemake/metadata").mkdir(parents=True, exist_ok=True)
        Path(".snakemake/metadata", name).write_text(json.dumps({"rule": "r", "input": []}))

    def is_output(path: str) -> bool:
        return path.rsplit("/", 1)[-1] in ("estimates.md", "estimates.parquet")

    lines = set_aside_foreign("results/s", tables, config, is_output=is_output, stamp="T")
    short = (record["config_sha256"][:16], own["config_sha256"][:16])
    assert lines == [
        f"debiaseval: {tables[0]} was made by config sha256 {short[0]}, not this run's "
        f"({short[1]}), and Snakemake has no record of it (copied in?): its folder's "
        "unrecorded outputs are set aside (files of one's own stay)",
        f"debiaseval: {tables[1]} was made by config sha256 {short[0]}, not this run's "
        f"({short[1]}): its jobs run again",
        "debiaseval: moved 2 file(s) to results/s/.foreign/T/ so that this config's jobs make "
        "them again",
    ]
    assert sorted(str(p) for p in Path("results/s/.foreign/T").rglob("*.*")) == [
        "results/s/.foreign/T/e3/copied/estimates.md",
        "results/s/.foreign/T/e3/copied/estimates.parquet",
    ]
    assert tables[1].exists() and tables[2].exists()
    again = set_aside_foreign("results/s", tables, config, is_output=is_output)
    assert again == [lines[1]]  # nothing left to move


# --------------------------------------------------------------------------- the workflow

# Two small E1 configs on the synthetic data: A has 2 seeds and two models, B 1 seed and
# another model. The default config (config/config.yaml) is merged under each, as Snakemake does.
SMALL = {
    "experiments": ["e1"],
    "datasets": ["synthetic"],
    "synthetic": {"n_users": 60, "n_items": 80, "density": 0.1, "n_mar": 10, "rank": 4, "seed": 0},
}
TESTSETS = {"REG": {"strategy": "reg"}, "SKEW": {"strategy": "skew"}}
A = {
    **SMALL,
    "seeds": 2,
    "e1": {
        "ks": [5],
        "testsets": TESTSETS,
        "recommenders": {"Random": {"algorithm": "random"}, "PosPop": {"algorithm": "pospop"}},
    },
}
B = {
    **SMALL,
    "seeds": 1,
    "e1": {
        "ks": [5],
        "testsets": TESTSETS,
        "recommenders": {"ItemKNN": {"algorithm": "itemknn", "grid": {"k": [5]}}},
    },
}


def digests(folder: Path) -> dict[str, str]:
    """The SHA-256 of every file under ``folder``, by relative path."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def two_studies(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Study a run; a stale seed5/ planted beside its two seeds; then study b run in the same
    folder. Returns the folder and the digests of results/a/ taken before b ran."""
    from conftest import make_workdir, snakemake

    workdir = make_workdir(tmp_path_factory.mktemp("studies"))
    (workdir / "a.yaml").write_text(yaml.safe_dump(A))
    (workdir / "b.yaml").write_text(yaml.safe_dump(B))
    snakemake(workdir, "--cores", "2", configfiles=("a.yaml",))
    # a stale seed folder, as a former 6-seed run of the same study leaves: other numbers
    e1 = workdir / "results/a/e1/synthetic"
    shutil.copytree(e1 / "seed0", e1 / "seed5")
    stale = pd.read_parquet(e1 / "seed5/metrics.parquet")
    stale.assign(value=0.987654, seed=5).to_parquet(e1 / "seed5/metrics.parquet")
    before = digests(workdir / "results/a")
    run = snakemake(workdir, "--cores", "2", configfiles=("b.yaml",))
    (workdir / "b.out").write_text(run.stdout + run.stderr)
    return workdir, before


@pytest.mark.slow
def test_a_second_config_leaves_the_first_study_byte_identical_and_readable(two_studies):
    workdir, before = two_studies
    assert digests(workdir / "results/a") == before
    assert len(before) > 20
    a = pd.read_parquet(workdir / "results/a/e1/synthetic/summary.parquet")
    b = pd.read_parquet(workdir / "results/b/e1/synthetic/summary.parquet")
    assert set(a["recommender"]) == {"Random", "PosPop"} and (a["n_seeds"] == 2).all()
    assert set(b["recommender"]) == {"ItemKNN"} and (b["n_seeds"] == 1).all()
    # each study's resolved config names it, and its logs and benchmarks are its own
    for name, seeds in (("a", 2), ("b", 1)):
        resolved = yaml.safe_load((workdir / f"results/{name}/config.yaml").read_text())
        assert resolved["study"] == name and resolved["e1"]["seeds"] == seeds
        assert (workdir / f"logs/{name}/e1/synthetic/aggregate.log").is_file()
        assert (workdir / f"benchmarks/{name}/e1/synthetic/aggregate.tsv").is_file()
    assert sorted(p.name for p in (workdir / "results").iterdir()) == ["a", "b"]
    out = (workdir / "b.out").read_text()
    assert "debiaseval: the run of study b (results/b/) is complete." in out
    assert "E1 on synthetic: results/b/e1/synthetic/" in out
    # and study a is still complete: nothing of it to rerun
    from conftest import snakemake

    assert "Nothing to be done" in snakemake(workdir, "-n", configfiles=("a.yaml",)).stdout


@pytest.mark.slow
def test_an_aggregate_reads_its_configs_seeds_only_never_a_stale_folder(two_studies):
    """Rerunning study a's aggregate beside the planted seed5/ gives the same bytes: it reads
    the config's seeds 0 and 1, listed explicitly, not the folders it finds."""
    from conftest import snakemake

    workdir, before = two_studies
    snakemake(workdir, "--cores", "1", "--forcerun", "e1_aggregate", configfiles=("a.yaml",))
    after = digests(workdir / "results/a")
    # provenance.json records the run's date and commit: a rerun rewrites it by design
    dated = {name for name in after if name.endswith("/provenance.json")}
    assert dated and {n: d for n, d in after.items() if n not in dated} == {
        n: d for n, d in before.items() if n not in dated
    }
    summary = pd.read_parquet(workdir / "results/a/e1/synthetic/summary.parquet")
    assert not (summary["mean"] == 0.987654).any()


@pytest.mark.slow
def test_another_file_of_the_same_name_is_refused_before_any_job(two_studies):
    """The second audit ran cfg/t1.yaml, then cfg2/t1.yaml (another model): one study, the
    first model silently gone. Study a records a.yaml; other/a.yaml is refused, by a dry run
    and a real run alike, and runs as a study of its own."""
    from conftest import snakemake

    workdir, _ = two_studies
    before = digests(workdir / "results/a")
    assert json.loads((workdir / "results/a/study.json").read_text()) == {
        "study": "a",
        "configfile": "a.yaml",
    }
    (workdir / "other").mkdir(exist_ok=True)
    (workdir / "other/a.yaml").write_text(yaml.safe_dump(B))
    for args in (("-n",), ("--cores", "2")):
        result = snakemake(workdir, *args, configfiles=("other/a.yaml",), check=False)
        assert result.returncode != 0
        lines = [line for line in result.stderr.splitlines() if line.startswith("debiaseval:")]
        assert lines == [
            "debiaseval: study 'a' (results/a/) holds the results of a.yaml, and other/a.yaml "
            "has the same name: give this run a study of its own (--config study=<name>, or "
            "the key study in other/a.yaml), or run a.yaml"
        ], result.stderr
    assert digests(workdir / "results/a") == before
    run = snakemake(workdir, "-n", "--config", "study=a2", configfiles=("other/a.yaml",))
    assert "e1_aggregate" in run.stdout
    # the file that named the study, however written, is the same file
    assert "Nothing to be done" in snakemake(workdir, "-n", configfiles=("./a.yaml",)).stdout


@pytest.mark.slow
def test_a_bad_study_name_stops_before_any_job(tmp_path):
    from conftest import make_workdir, snakemake

    workdir = make_workdir(tmp_path / "bad")
    (workdir / "a.yaml").write_text(yaml.safe_dump({**A, "study": "../elsewhere"}))
    result = snakemake(workdir, "-n", configfiles=("a.yaml",), check=False)
    assert result.returncode != 0
    assert "config error at 'study': '../elsewhere' is not a folder name" in result.stderr
    assert not (workdir / "results").exists()


# --------------------------------------------------------------------------- a changed config


def _recorded(tmp_path: Path, config: dict) -> Path:
    folder = tmp_path / "results" / "s"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def test_a_changed_config_names_its_keys_old_to_new_and_the_way_to_keep_both(tmp_path):
    from debiaseval.workflow.studies import config_notice

    config = {**validate_config({}), "study": "s"}
    folder = _recorded(tmp_path, config)
    assert config_notice(folder, "s", config) is None  # the same config: nothing to say
    assert config_notice(tmp_path / "new", "s", config) is None  # a new study: nothing recorded
    changed = {**config, "e1": {**config["e1"], "rho": 0.4}, "resources": {"train": {}}}
    changed["mirror"] = "/elsewhere"  # where files come from: not a change of the results
    notice = config_notice(folder, "s", changed)
    lines = notice.splitlines()
    assert lines[1] == "  e1.rho: 0.5 -> 0.4" and len(lines) == 3, notice
    assert f"study 's' ({folder / 'config.yaml'})" in lines[0]
    assert lines[-1].endswith(
        "to keep both studies, give this run a study of its own: --config study=NAME"
    )


def test_adding_a_dataset_says_nothing_is_replaced_and_why_an_experiment_has_none(tmp_path):
    """Issue 43, case 17: adding coat said its jobs "replace their results", and a derived
    e3.datasets turning [] did not say why."""
    from debiaseval.workflow.studies import config_notice

    config = {**validate_config({}), "study": "default"}
    folder = _recorded(tmp_path, config)
    added = {**validate_config({"datasets": ["synthetic", "coat"]}), "study": "default"}
    lines = config_notice(folder, "default", added).splitlines()
    assert "  datasets: [synthetic] -> [synthetic, coat]" in lines
    assert lines[-1] == (
        f"debiaseval: the jobs of the datasets added run and write beside the results in "
        f"{folder}/, replacing none"
    )
    swapped = {**validate_config({"datasets": ["coat"]}), "study": "default"}
    lines = config_notice(folder, "default", swapped).splitlines()
    assert (
        "  e3.datasets: [synthetic] -> [] (from datasets [coat]: none of them has what E3 "
        "needs, a full rating matrix with its observation model)" in lines
    )
    assert lines[-1] == (
        f"debiaseval: the jobs of the datasets added run and write beside the results in "
        f"{folder}/, replacing none; the results of the datasets left out stay in {folder}/ "
        "as they are"
    )


def test_a_big_change_is_a_few_short_lines(tmp_path):
    from debiaseval.workflow.studies import NOTICE_KEYS, NOTICE_VALUE, config_notice

    config = {**validate_config({}), "study": "s"}
    folder = _recorded(tmp_path, config)
    e1 = config["e1"]
    grid = {"factors": list(range(1, 500))}
    changed = {
        **config,
        "seeds": 7,
        "e1": {
            **e1,
            "ks": [5, 10, 20],
            "rho": 1,
            "recommenders": {
                **e1["recommenders"],
                "MF2": {**e1["recommenders"]["MF"], "grid": grid},
            },
        },
        "e3": {**config["e3"], "n_draws": 3},
        "synthetic": {**config["synthetic"], "seed": 4},
    }
    del changed["e1"]["tuning"]
    notice = config_notice(folder, "s", changed)
    lines = notice.splitlines()
    assert len(lines) == NOTICE_KEYS + 3 and len(notice) < 1000, notice
    assert "  seeds: 2 -> 7" in lines and "  e1.ks: [10] -> [5, 10, 20]" in lines
    assert "  e1.rho: 0.5 -> 1" in lines  # a float becoming an int is a change
    shown = [line for line in lines if line.startswith("  e1.recommenders.MF2:")]
    assert shown and shown[0].startswith("  e1.recommenders.MF2: (absent) -> {")
    assert len(shown[0]) <= len("  e1.recommenders.MF2: (absent) -> ") + NOTICE_VALUE
    assert shown[0].endswith("…")
    assert "  synthetic.seed: 0 -> 4" in lines
    assert lines[-2] == "  ... and 2 more key(s)"  # e1.tuning (gone), e3.n_draws
