# Validated config, the names the rules' wildcards may take, and target helpers.
# Logic lives in src/debiaseval; this file only wires the config into rules.
import os
import re
import sys

from debiaseval import code_hash
from debiaseval.config import ConfigError, validate_config
from debiaseval.datasets import MIRROR_ENV

try:
    config.update(validate_config(config))
except ConfigError as error:
    sys.exit(str(error))  # one line naming the key, before any job is scheduled

CODE = code_hash()
E1 = config["e1"]
DOWNLOADABLE = ["coat", "yahoo-r3", "ml-100k", "ml-1m"]
MF_RECOMMENDERS = [n for n, spec in E1["recommenders"].items() if spec["algorithm"] == "mf"]


def _alternatives(names):
    return "|".join(re.escape(name) for name in names)


wildcard_constraints:
    dataset=_alternatives(["synthetic", *DOWNLOADABLE]),
    seed=r"\d+",
    recommender=_alternatives(E1["recommenders"]),
    testset=_alternatives(E1["testsets"]),


def mirror():
    """The local dataset mirror: config key `mirror`, else $DEBIASEVAL_MIRROR, else none."""
    return config["mirror"] or os.environ.get(MIRROR_ENV) or None


def preprocess_input(wildcards):
    if wildcards.dataset == "synthetic":
        return {}
    return {"raw": ancient(f"resources/raw/{wildcards.dataset}")}


def resources_of(stage):
    return config["resources"][stage]


def e1_targets():
    return expand(
        "results/e1/{dataset}/{table}",
        dataset=config["datasets"],
        table=["summary.parquet", "kendall.parquet", "summary.md", "kendall.md"],
    )
