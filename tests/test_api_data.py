"""The Python API keeps to its own cache folder and refuses unusable datasets before loading."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from debiaseval import api
from debiaseval.data import DATA_ENV, cache_folder
from debiaseval.datasets import load as data_load


def test_the_cache_is_debiaseval_data_else_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "data"))
    assert cache_folder() == tmp_path / "data"
    monkeypatch.delenv(DATA_ENV)
    if sys.platform.startswith("linux"):  # platformdirs follows the XDG spec there
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cache_folder() == tmp_path / "xdg" / "debiaseval"
    else:
        assert cache_folder().name == "debiaseval"


def test_load_dataset_fetches_into_the_cache_never_the_working_folder(monkeypatch, tmp_path):
    fetched: list[Path] = []

    def fetch(name, dest, **_):
        fetched.append(Path(dest))
        Path(dest).mkdir(parents=True)
        return Path(dest)

    def build(name, folder, **_):
        frame = pd.DataFrame({"user": [0], "item": [0], "rating": [1.0], "part": ["mnar"]})
        return frame, pd.DataFrame({"user": [0]}), pd.DataFrame({"item": [0]}), None

    monkeypatch.setattr(data_load, "fetch_dataset", fetch)
    monkeypatch.setattr(data_load, "build_dataset", build)
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    api.load_dataset("coat")
    api.load_dataset("coat")  # the second call reuses the cached folder
    assert fetched == [tmp_path / "cache" / "coat"]
    assert not (tmp_path / "resources").exists()


def test_e1_says_a_dataset_has_no_mar_part_before_loading_it(monkeypatch):
    def load(*args, **kwargs):
        raise AssertionError("E1 loaded ml-100k before checking it")

    monkeypatch.setattr(data_load, "load_dataset", load)
    with pytest.raises(ValueError) as error:
        api.run_e1("ml-100k")
    assert str(error.value) == (
        "E1 cannot run on 'ml-100k', which lacks a MAR part; E1 needs an MNAR part and a MAR part"
    )
    with pytest.raises(ValueError, match=r"^E2 cannot run on 'ml-100k-semi', which lacks an MNAR"):
        api.run_e2("ml-100k-semi")


@pytest.mark.realdata
def test_load_coat_from_the_mirror_into_the_cache(monkeypatch, tmp_path):
    if not os.environ.get("DEBIASEVAL_MIRROR"):
        pytest.skip("DEBIASEVAL_MIRROR not set: no local copy of the Coat dataset")
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    interactions, _, _ = api.load_dataset("coat")
    assert interactions["part"].value_counts().to_dict() == {"mnar": 6960, "mar": 4640}
    assert (tmp_path / "cache" / "coat" / "train.ascii").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]


def test_the_api_re_exports_the_data_layer_s_load_dataset():
    assert api.load_dataset is data_load.load_dataset
