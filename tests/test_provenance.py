"""The provenance record of every result: hash, checksums, writers (docs/report.md#provenance)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from debiaseval import __version__
from debiaseval.workflow import provenance as prov
from debiaseval.workflow.config import validate_config

ROOT = Path(__file__).resolve().parents[1]
TINY = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())


def test_config_hash_is_the_sha256_of_canonical_json_whatever_the_key_order() -> None:
    a = {"b": [1, 2.5, None], "a": {"y": "é", "x": True}}
    b = {"a": {"x": True, "y": "é"}, "b": [1, 2.5, None]}
    text = '{"a":{"x":true,"y":"é"},"b":[1,2.5,null]}'
    assert prov.canonical_json(a) == text
    assert prov.config_hash(a) == prov.config_hash(b)
    assert prov.config_hash(a) == hashlib.sha256(text.encode()).hexdigest()
    assert prov.config_hash({**a, "c": 1}) != prov.config_hash(a)


def test_an_experiment_s_config_leaves_out_the_other_blocks_and_the_selection() -> None:
    config = validate_config(TINY)
    e1 = prov.experiment_config(config, "e1")
    assert "e1" in e1 and "sources" in e1 and "synthetic" in e1
    assert not {"e2", "e3", "e4", "e5", "e6", "experiments"} & set(e1)
    changed = {**config, "e2": {**config["e2"], "n_asked": 5}}
    assert prov.config_hash(prov.experiment_config(changed, "e1")) == prov.config_hash(e1)
    assert prov.config_hash(prov.experiment_config(changed, "e2")) != prov.config_hash(
        prov.experiment_config(config, "e2")
    )


def test_two_studies_of_the_same_science_share_one_hash_and_a_science_key_changes_it() -> None:
    config = validate_config(TINY)
    elsewhere = validate_config(
        {
            **TINY,
            "study": "other",
            "mirror": "/srv/mirror",
            "plugin_paths": ["plugins"],
            "sources": {"coat": {"path": "/data/coat", "url": "file:///tmp/coat.tgz"}},
        }
    )
    assert prov.config_hash(elsewhere) == prov.config_hash(config)
    for experiment in ("e1", "e3"):
        own = prov.experiment_config(elsewhere, experiment)
        assert own == prov.experiment_config(config, experiment)
        assert not {"study", "mirror", "plugin_paths"} & set(own)
        assert own["sources"]["coat"] == {}
    assert elsewhere["sources"]["coat"]["path"] == "/data/coat"  # the config is left untouched
    for science in (
        {"seeds": 3},
        {"e1": {**config["e1"], "rho": 0.25}},
        {"synthetic": {**config["synthetic"], "seed": 7}},
    ):
        changed = {**elsewhere, **science}
        assert prov.config_hash(changed) != prov.config_hash(config)
        assert prov.config_hash(prov.experiment_config(changed, "e1")) != prov.config_hash(
            prov.experiment_config(config, "e1")
        )
    assert set(prov.PLACEMENT) >= {"study", "mirror"}


def test_checksums_walk_folders_and_are_cached_by_size_and_mtime(tmp_path: Path) -> None:
    raw = tmp_path / "raw" / "toy"
    (raw / "sub").mkdir(parents=True)
    (raw / "a.txt").write_bytes(b"abc")
    (raw / "sub" / "b.txt").write_bytes(b"")
    (raw / ".hidden").write_bytes(b"x")
    cache = tmp_path / "cache.json"
    sums = prov.file_checksums([raw, tmp_path / "missing"], cache)
    assert sums == {
        (raw / "a.txt").as_posix(): hashlib.sha256(b"abc").hexdigest(),
        (raw / "sub" / "b.txt").as_posix(): hashlib.sha256(b"").hexdigest(),
    }
    # a cached entry is trusted while size and mtime match: forge it to see it used
    entries = json.loads(cache.read_text())
    entries[(raw / "a.txt").as_posix()][2] = "cached"
    cache.write_text(json.dumps(entries))
    assert prov.file_checksums([raw], cache)[(raw / "a.txt").as_posix()] == "cached"
    # a new content (other size and mtime) is read again
    (raw / "a.txt").write_bytes(b"abcd")
    os.utime(raw / "a.txt", ns=(1, 1))
    assert prov.file_checksums([raw], cache)[(raw / "a.txt").as_posix()] == (
        hashlib.sha256(b"abcd").hexdigest()
    )


def test_the_record_is_stable_and_names_versions_seeds_and_data(tmp_path: Path) -> None:
    config = validate_config(TINY)
    data = tmp_path / "ratings.csv"
    data.write_text("user,item,rating\n1,2,3\n")
    first = prov.with_checksums(prov.gather(config, "e1", inputs=[data]), cache=None)
    assert first == prov.with_checksums(prov.gather(config, "e1", inputs=[data]), cache=None)
    assert first["debiaseval"] == __version__
    assert first["seeds"] == config["e1"]["seeds"]
    assert first["config_sha256"] == prov.config_hash(prov.experiment_config(config, "e1"))
    assert first["data"] == {data.as_posix(): hashlib.sha256(data.read_bytes()).hexdigest()}
    versions = first["versions"]
    assert {"python", "numpy", "pandas", "pyarrow", "scipy", "snakemake", "lightfm"} <= set(
        versions
    )
    assert versions["numpy"] == __import__("numpy").__version__
    assert first["plugins"] == {}
    assert not {"date", "commit", "dirty", "inputs"} & set(first)
    json.dumps(first)  # JSON all the way down


def test_a_plugin_recommender_is_named_with_its_code_hash(tmp_path: Path, monkeypatch) -> None:
    from test_plugins import MY_POP

    (tmp_path / "myrecs_prov.py").write_text(MY_POP)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {
        "e1": {
            "recommenders": {
                "Mine": {"algorithm": "myrecs_prov:MyPop"},
                "Pop": {"algorithm": "pospop"},
            }
        }
    }
    found = prov.plugin_versions(config)
    assert list(found) == ["myrecs_prov:MyPop"]
    assert found["myrecs_prov:MyPop"].startswith("source sha256:")


def test_git_state_outside_a_checkout_is_none(tmp_path: Path) -> None:
    assert prov.git_state(tmp_path) == {"commit": None, "dirty": None}


def test_git_state_names_the_commit_and_dirty_flag(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    run = lambda *a: subprocess.run(  # noqa: E731
        ["git", *a],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    run("init", "-q")
    (tmp_path / "f").write_text("1")
    run("add", "f")
    run("commit", "-q", "-m", "x")
    head = run("rev-parse", "HEAD").stdout.strip()
    assert prov.git_state(tmp_path) == {"commit": head, "dirty": False}
    (tmp_path / "f").write_text("2")
    assert prov.git_state(tmp_path) == {"commit": head, "dirty": True}
    fields = prov.run_fields(tmp_path)
    assert fields["date"].endswith("+00:00") and fields["commit"] == head


def test_write_table_carries_the_record_and_stays_byte_identical(tmp_path: Path) -> None:
    frame = pd.DataFrame({"recommender": ["A", "B"], "value": [0.5, 0.25]})
    record = prov.gather(validate_config(TINY), "e1")
    prov.write_table(frame, tmp_path / "a.parquet", record)
    prov.write_table(frame, tmp_path / "b.parquet", record)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert prov.read_provenance(tmp_path / "a.parquet") == json.loads(json.dumps(record))
    raw = pq.read_metadata(tmp_path / "a.parquet").metadata[b"debiaseval.provenance"]
    assert json.loads(raw)["config_sha256"] == record["config_sha256"]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a.parquet"), frame)
    other = {**record, "seeds": 99}
    prov.write_table(frame, tmp_path / "c.parquet", other)
    assert (tmp_path / "c.parquet").read_bytes() != (tmp_path / "a.parquet").read_bytes()


def test_read_provenance_of_a_plain_file_is_none(tmp_path: Path) -> None:
    from debiaseval.io.files import write_parquet

    write_parquet(pd.DataFrame({"x": [1]}), tmp_path / "x.parquet")
    assert prov.read_provenance(tmp_path / "x.parquet") is None


def test_the_markdown_header_sits_under_the_title(tmp_path: Path) -> None:
    record = {
        "debiaseval": "9.9",
        "config_sha256": "ab" * 32,
        "seeds": 3,
        "data": {"resources/raw/coat/train.ascii": "cd" * 32},
        "versions": {"python": "3.11.1", "lightfm": None},
        "plugins": {},
    }
    text = "# E1 on coat\n\n| a |\n|---|\n| 1 |\n"
    out = prov.with_header(text, record)
    lines = out.splitlines()
    assert lines[0] == "# E1 on coat" and lines[1] == ""
    assert lines[2].startswith("> debiaseval 9.9 · config sha256 `" + "ab" * 8 + "`")
    assert "seeds 3" in lines[2] and "`train.ascii` " + "cd" * 6 in lines[3]
    assert "python 3.11.1" in out and "lightfm" not in out
    assert out.endswith(text.split("\n", 1)[1].lstrip("\n"))
    assert prov.with_header("no title\n", record).endswith("\nno title\n")
    prov.write_markdown(text, tmp_path / "s.md", record)
    assert (tmp_path / "s.md").read_text() == out
    # a record read back from a file (keys sorted) gives the same header
    reordered = json.loads(
        prov.canonical_json(
            {**record, "versions": {"lightfm": None, "numpy": "2", "python": "3.11.1"}}
        )
    )
    assert list(reordered["versions"]) == ["lightfm", "numpy", "python"]
    assert "> python 3.11.1, numpy 2" in prov.markdown_header(reordered)


def test_the_record_file_adds_the_run_fields(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # outside a checkout
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "r.txt").write_bytes(b"r")
    record = {"debiaseval": __version__, "config_sha256": "x", "inputs": ["raw"]}
    stable = prov.record_run(record, tmp_path / "provenance.json")
    assert stable == {
        "debiaseval": __version__,
        "config_sha256": "x",
        "data": {"raw/r.txt": hashlib.sha256(b"r").hexdigest()},
    }
    written = json.loads((tmp_path / "provenance.json").read_text())
    assert written == {**stable, "date": written["date"], "commit": None, "dirty": None}
    assert (tmp_path / prov.CHECKSUM_CACHE).is_file()


@pytest.mark.parametrize("bad", [float("nan")])
def test_canonical_json_keeps_what_json_keeps(bad) -> None:
    assert prov.canonical_json({"a": bad}) == '{"a":NaN}'


@pytest.mark.realdata
def test_coat_s_raw_checksums_are_the_registry_s(tmp_path: Path) -> None:
    """The record of Coat's results names each downloaded file with the SHA-256 the dataset
    registry accepts for it."""
    from debiaseval.data import MIRROR_ENV, SOURCES
    from debiaseval.data.download import fetch_dataset

    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror or not (Path(mirror) / "coat").is_dir():
        pytest.skip(f"{MIRROR_ENV} not set or without coat")
    raw = fetch_dataset("coat", tmp_path / "raw" / "coat", mirror=Path(mirror))
    record = prov.with_checksums({"inputs": [raw]}, cache=tmp_path / "cache.json")
    expected = SOURCES["coat"].files
    assert {Path(p).relative_to(raw).as_posix() for p in record["data"]} >= set(expected)
    for path, digest in record["data"].items():
        accepted = expected.get(Path(path).relative_to(raw).as_posix())
        if accepted:
            assert digest in accepted, path
