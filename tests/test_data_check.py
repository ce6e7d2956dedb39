"""Missing data said at the start: which datasets cannot be had, and how to run without them."""

from __future__ import annotations

from debiaseval.workflow.config import validate_config
from debiaseval.workflow.data_check import drop_datasets, missing_data_message, unobtainable


def test_only_manual_datasets_without_any_local_copy_are_unobtainable(tmp_path):
    raw, mirror = tmp_path / "raw", tmp_path / "mirror"
    names = ["synthetic", "coat", "ml-1m", "yahoo-r3", "librarything", "yahoo-r3"]
    kwargs = {"raw_root": raw, "mirror": None, "sources": {}}
    assert unobtainable(names, **kwargs) == ["yahoo-r3", "librarything"]  # each once, in order
    (mirror / "yahoo-r3").mkdir(parents=True)
    assert unobtainable(names, **{**kwargs, "mirror": mirror}) == ["librarything"]
    (raw / "librarything").mkdir(parents=True)
    assert unobtainable(names, **{**kwargs, "mirror": mirror}) == []
    # sources.<name>.path counts only when it exists; a url makes the dataset downloadable
    archive = tmp_path / "yahoo.zip"
    sources = {"yahoo-r3": {"path": str(archive)}}
    assert unobtainable(["yahoo-r3"], raw_root=raw, mirror=None, sources=sources) == ["yahoo-r3"]
    archive.write_bytes(b"")
    assert unobtainable(["yahoo-r3"], raw_root=raw, mirror=None, sources=sources) == []
    sources = {"yahoo-r3": {"url": "https://example.org/r3.zip"}}
    assert unobtainable(["yahoo-r3"], raw_root=raw, mirror=None, sources=sources) == []


PAPER_LIKE = {
    "datasets": ["coat", "yahoo-r3"],
    "experiments": ["e1", "e2", "e5"],
    "e2": {"datasets": ["ml-100k", "librarything"]},
    "e5": {"datasets": ["yahoo-r3"]},
}


def _paper_like() -> dict:
    return validate_config(PAPER_LIKE)


def test_dropping_names_every_list_that_holds_the_dataset():
    config = _paper_like()
    # e1 follows the top-level list; e2 and e5 have their own; e5 is left with nothing
    assert drop_datasets(config, ["yahoo-r3", "librarything"]) == [
        "datasets=[coat]",
        "e2={datasets: [ml-100k]}",
        "experiments=[e1, e2]",
    ]
    assert drop_datasets(config, ["ml-1m"]) == []
    # what --config makes of them (Snakemake merges its mappings into the config's) is a valid
    # config whose experiments no longer name the dropped datasets
    narrowed = validate_config(
        {
            **PAPER_LIKE,
            "datasets": ["coat"],
            "e2": {"datasets": ["ml-100k"]},
            "experiments": ["e1", "e2"],
        }
    )
    for experiment in narrowed["experiments"]:
        assert not {"yahoo-r3", "librarything"} & set(narrowed[experiment]["datasets"])


def test_the_message_names_each_dataset_where_to_put_it_and_how_to_drop_it():
    message = missing_data_message(_paper_like(), ["yahoo-r3", "librarything"])
    lines = message.splitlines()
    assert lines[0].startswith("debiaseval: 2 datasets of this run cannot be downloaded")
    assert lines[1].startswith("  yahoo-r3: Yahoo! R3 cannot be downloaded automatically")
    assert "Places read: resources/raw/yahoo-r3/, <mirror>/yahoo-r3/" in lines[1]
    assert lines[2].startswith("  librarything: ") and "sources.librarything.path" in lines[2]
    assert lines[3] == (
        "Or run without them: snakemake ... --config 'datasets=[coat]' "
        "'e2={datasets: [ml-100k]}' 'experiments=[e1, e2]'"
    )
    alone = validate_config({"datasets": ["yahoo-r3"], "experiments": ["e1"]})
    assert missing_data_message(alone, ["yahoo-r3"]).splitlines()[-1] == (
        "Every experiment of this run needs one of them."
    )
