# Validated config, the names the rules' wildcards may take, and target helpers.
# Logic lives in src/debiaseval; this file only wires the config into rules.
import functools
import importlib
import os
import re
import sys

from debiaseval.workflow import resources as scaled_resources
from debiaseval.workflow.code_stamps import code_stamps
from debiaseval.workflow.config import study_as_written, study_name, validate_config
from debiaseval.workflow.names import check_workflow_paths
from debiaseval.io.errors import ConfigError
from debiaseval.io.terminal import inert_terminal
from debiaseval.data import MIRROR_ENV, SOURCES
from debiaseval.datasets.build import SOURCE_OF
from debiaseval.data.catalog import dataset_names, user_sources
from debiaseval.data.draws import DRAW_BLOCKS, drawn_datasets, generator_block, seed_block
from debiaseval.data.user_logs import LOAD_KEYS, log_files, missing_file
from debiaseval.evaluation.external_lists import lists_path, missing_lists
from debiaseval.experiments.e5 import FULLY_EXPOSED
from debiaseval.figures import figure_module
from debiaseval.recommenders.registry import EXTERNAL, plugin_source_hash
from debiaseval.selection.tuning import grid_chunks
from debiaseval.workflow.data_check import missing_data_message, unobtainable
from debiaseval.workflow.locks import guard_locks
from debiaseval.io.files import read_only_message
from debiaseval.workflow.params import job_params
from debiaseval.workflow.provenance import dataset_record
from debiaseval.workflow.provenance import gather as gather_provenance
from debiaseval.workflow.repair import rebuild_damaged, runs_jobs
from debiaseval.workflow.report import finished_message, report_command, table_labels
from debiaseval.workflow.studies import config_notice, origin_conflict, record_origin

# Snakemake removes the locks of every run in this folder when one run ends, and a run taking
# its locks at that moment dies with a FileNotFoundError: runs of this workflow remove only their
# own locks, and take theirs even when another run removed the folder (debiaseval.workflow.locks).
guard_locks()


def stop(message):
    """End this command before any job with ``message``, each of its lines inert for a terminal
    (a control character of a user's name or file escaped)."""
    sys.exit(inert_terminal(message, lines=True))


def say(message):
    """Print ``message`` on stderr, each of its lines inert for a terminal."""
    print(inert_terminal(message, lines=True), file=sys.stderr)


try:
    # A study name YAML or Snakemake read as a number (1.50, inf) as the user wrote it; the
    # Snakefile's own config file first, the --configfile(s) after it, as Snakemake merges them.
    _files = [*(f for f in workflow.configfiles if f not in workflow.overwrite_configfiles),
              *workflow.overwrite_configfiles]  # fmt: skip
    config["study"] = study_as_written(config.get("study"), sys.argv[1:], _files)
    config.update(validate_config(config, configfiles=_files))
    # The study: the key `study`, else the stem of the last --configfile, else "default".
    # Snakemake passes the same --configfile(s) and --config to every job it starts, so each
    # job resolves the same name. The resolved config records it (results/<study>/config.yaml).
    NAMED_BY_FILE = config["study"] is None and bool(workflow.overwrite_configfiles)
    config["study"] = study_name(config["study"], workflow.overwrite_configfiles)
    check_workflow_paths(config)  # the files of one's own that rules take as inputs
except ConfigError as error:
    stop(str(error))  # one line naming the key, before any job is scheduled

STUDY = config["study"]
RESULTS = f"results/{STUDY}"
# Whether this command runs jobs, read from its command line (debiaseval.workflow.repair): the
# parse-time steps below (the damage repair, the refusal of another config file's study) need
# it before the DAG is built, which onstart comes after.
RUNS_JOBS = (
    workflow.is_main_process
    and not workflow.output_settings.dryrun
    and runs_jobs(sys.argv[1:])
)

# A study named after its config file records that file (results/<study>/study.json and a copy
# in .snakemake/debiaseval/studies/<study>.json, when the first job starts: record_study_origin,
# in the Snakefile's onstart); another file of the same name (cfg2/t1.yaml after cfg/t1.yaml),
# or an unusable record, is refused before any job, dry runs included, instead of replacing the
# study's results (debiaseval.workflow.studies).
if NAMED_BY_FILE and workflow.is_main_process:
    _conflict = origin_conflict(RESULTS, STUDY, workflow.overwrite_configfiles)
    if _conflict and (workflow.output_settings.dryrun or RUNS_JOBS):
        stop(_conflict)


# A run whose config differs from the one recorded for its study (results/<study>/config.yaml)
# names the keys that changed, old -> new, and how to keep both studies (--config study=NAME),
# before any job, dry runs included; then it proceeds as Snakemake does (its changed jobs rerun).
if workflow.is_main_process and (workflow.output_settings.dryrun or RUNS_JOBS):
    _notice = config_notice(RESULTS, STUDY, config)
    if _notice:
        say(_notice)


def record_study_origin():
    """Record the config file that named this study, once its run starts jobs."""
    if NAMED_BY_FILE and RUNS_JOBS:
        record_origin(RESULTS, STUDY, workflow.overwrite_configfiles)


# Every file a study makes lies under its own folder: results/<study>/, logs/<study>/ and
# benchmarks/<study>/ (docs/getting-started.md#studies); only downloads (resources/raw/) are
# shared. Rules name their files through these three functions and nothing else, e.g.
#     output: results("e1/{dataset}/seed{seed}/split.parquet")
#     log: logs("e1/{dataset}/seed{seed}/split.log")
#     benchmark: bench("e1/{dataset}/seed{seed}/split.tsv")
# They only prefix the study's folder: the path keeps its wildcards as written, with single
# braces for a rule's wildcards and double braces inside expand(), as before. A new rule's
# literal "results/x", "logs/x" or "benchmarks/x" becomes results("x"), logs("x"), bench("x").
def results(path):
    """``path`` under this study's results folder, ``results/<study>/<path>``."""
    return f"{RESULTS}/{path}"


def logs(path):
    """``path`` under this study's log folder, ``logs/<study>/<path>``."""
    return f"logs/{STUDY}/{path}"


def bench(path):
    """``path`` under this study's benchmark folder, ``benchmarks/<study>/<path>``."""
    return f"benchmarks/{STUDY}/{path}"


# Damaged outputs under this study's results/<study>/ (a Parquet, PNG, SVG, HTML or Markdown
# file a rule made, truncated by a full disk, say; a file of one's own and other studies'
# files are never looked at) are moved with every output made from them (Snakemake's
# records) into results/<study>/.damaged/<time>/, so that their jobs run again; nothing is
# deleted. Only a command that runs jobs checks (not -n, --list-rules, --summary, --lint,
# --dag, --unlock, --report, ...), and only in the main process, not in the jobs it starts.
# A file the file system does not let us read (permission denied, an I/O error) is reported
# and left alone. This runs here, while Snakemake parses the workflow, not in onstart:
# Snakemake plans the jobs from the files present, so an output moved after the DAG is built
# would not be rebuilt by this run (debiaseval.workflow.repair).
if RUNS_JOBS:
    _lines, _stop = rebuild_damaged(RESULTS)
    for _line in _lines:
        say(_line)
    if _stop:
        stop(_stop)

# Each script's code stamp (workflow/scripts/<name>.py: its code and that of the package modules
# it imports, docstrings and comments left out; debiaseval.workflow.code_stamps), in the params
# of its rule's jobs as code=CODE["<name>"]: a code edit reruns exactly the jobs whose step
# imports the edited module, and a docstring or comment edit reruns none.
CODE = code_stamps(os.path.join(workflow.basedir, "workflow", "scripts"))
# A plugin recommender's code hash (empty for the package's own): its module and the modules of
# one's own it imports, docstrings and comments left out; in the params of the jobs that use
# it, so that a code edit of any of them reruns those jobs. Computed once per algorithm and run.
plugin_hash = functools.cache(plugin_source_hash)
DOWNLOADABLE = list(SOURCES)
EXPERIMENTS = config["experiments"]
# The config's own datasets (sources.<name> with a ratings file): their files, checked now.
OWN_DATASETS = user_sources(config["sources"])
_USED = {d for e in EXPERIMENTS for d in config[e]["datasets"]}
for _name in (name for name in OWN_DATASETS if name in _USED):  # in config order
    _missing = missing_file(_name, OWN_DATASETS[_name])
    if _missing:
        stop(_missing)


def _alternatives(names):
    """A wildcard regex matching exactly ``names`` (none: a regex that never matches)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


wildcard_constraints:
    dataset=_alternatives(dataset_names(config["sources"])),
    seed=r"\d+",
    chunk=r"\d+",
    recommender=_alternatives(config["e1"]["recommenders"]),
    testset=_alternatives(config["e1"]["testsets"]),
    method=_alternatives(config["e2"]["methods"]),
    strategy=_alternatives(config["e2"]["strategies"]),


# Generated datasets drawn afresh for every seed (synthetic.per_seed, semireal.per_seed): each
# seed's data is data/<dataset>/seed<s>/ (rule preprocess_draw), from a seed derived from (the
# block's seed, s).
DRAWN = drawn_datasets(config, dataset_names(config["sources"]))


def generator_of(dataset):
    """The generator block the shared preprocessing of ``dataset`` takes (None if not generated):
    its DRAW_BLOCKS block (synthetic's, or semireal's for jester5k-semi)."""
    block = DRAW_BLOCKS.get(dataset)
    return None if block is None else generator_block(config[block])


def draw_block(wildcards):
    """Params function: the generator block of the job's dataset and seed, its seed's own draw
    where the dataset is drawn per seed (None for a dataset not generated)."""
    return seed_block(config, wildcards.dataset, int(wildcards.seed))


def seed_file(drawn, shared, seed=None):
    """Input function: the file of the job's dataset and seed (or of the given ``seed``),
    ``drawn`` (a path with {dataset} and {seed}) where the dataset is drawn per seed, else
    ``shared`` (with {dataset})."""
    return lambda w: results(
        (drawn if w.dataset in DRAWN else shared).format(
            dataset=w.dataset, seed=w.seed if seed is None else seed
        )
    )


def data_file(name):
    """Input function: the preprocessed file ``name`` (interactions, users, items) of the job's
    dataset and seed: the seed's own draw (data/<dataset>/seed<s>/, rule preprocess_draw) where
    the dataset is drawn per seed, else the dataset's one (data/<dataset>/)."""
    return seed_file(f"data/{{dataset}}/seed{{seed}}/{name}", f"data/{{dataset}}/{name}")


def e1_data(name, seed=None):
    """Input function: E1's data file ``name`` (interactions, users, items) of the job's dataset
    and seed (or of the given ``seed``): the seed's own draw where the dataset is drawn per
    seed, else the shared one."""
    return seed_file(
        f"e1/{{dataset}}/seed{{seed}}/data/{name}", f"e1/{{dataset}}/data/{name}", seed
    )


def experiment_datasets(name):
    """The datasets experiment ``name`` runs on (its block's list, resolved from the top level)."""
    return config[name]["datasets"]


def experiment_seeds(name):
    """The seeds 0..n-1 of experiment ``name``."""
    return range(config[name]["seeds"])


def mirror():
    """The local dataset mirror: config key `mirror`, else $DEBIASEVAL_MIRROR, else none."""
    return config["mirror"] or os.environ.get(MIRROR_ENV) or None


def mirror_origin():
    """Where the mirror was set, for error messages."""
    if config["mirror"]:
        return "config key `mirror`"
    return f"${MIRROR_ENV}" if os.environ.get(MIRROR_ENV) else None


def preprocess_input(wildcards):
    """The raw folder of a built-in dataset, or the files of one of the config's own."""
    if wildcards.dataset in OWN_DATASETS:
        return log_files(OWN_DATASETS[wildcards.dataset])
    source = SOURCE_OF.get(wildcards.dataset, wildcards.dataset)
    if source not in SOURCES:
        return {}
    return {"raw": ancient(f"resources/raw/{source}")}


def known_propensities_input(wildcards):
    """Input function: the raw folder the known propensities of e1.estimators are drawn on
    (jester5k-semi's Jester5k file; nothing for synthetic, nor without known propensities)."""
    if any(spec.get("propensity") == "known" for spec in config["e1"]["estimators"].values()):
        return preprocess_input(wildcards)
    return {}


def own_dataset(wildcards):
    """The settings that shape one of the config's own datasets (None for a built-in one)."""
    spec = OWN_DATASETS.get(wildcards.dataset)
    return None if spec is None else {key: spec[key] for key in LOAD_KEYS}


def lists_input(experiment, entries, wildcard):
    """Input function for the jobs that read precomputed lists; the file of entry
    ``wildcards.<wildcard>`` of ``config[experiment][entries]`` for the job's dataset and seed.

    A run that needs a missing file stops while Snakemake builds its DAG, before any job,
    with one line naming every missing file of the entry (not a MissingInputException);
    runs that do not need the lists (``snakemake export``, say) are not concerned.
    """

    def lists(wildcards):
        name = getattr(wildcards, wildcard)
        template = config[experiment][entries][name]["recs"]
        path = lists_path(template, dataset=wildcards.dataset, seed=int(wildcards.seed))
        if not os.path.isfile(path):
            stop(
                missing_lists(
                    template,
                    where=f"{experiment}.{entries}.{name}",
                    datasets=experiment_datasets(experiment),
                    seeds=experiment_seeds(experiment),
                )
            )
        return path

    return lists


def resources_of(stage):
    return config["resources"][stage]


def job_mem_mb(stage, block, extra=None):
    """The rule's mem_mb: the config's number, else scaled with the job's input size."""
    return scaled_resources.mem_mb(stage, block["mem_mb"], extra=extra)


def job_runtime(stage, block, extra=None):
    """The rule's runtime (minutes): the config's number, else scaled with the input size."""
    return scaled_resources.runtime(stage, block["runtime"], extra=extra)


def synthetic_input_mb(wildcards):
    """Generated data has no input file: the MB its synthetic block stands for."""
    synthetic = config["synthetic"] if wildcards.dataset == "synthetic" else None
    return scaled_resources.expected_input_mb(synthetic)


def experiment_targets():
    """Final files of every experiment the config runs, on each of its datasets.

    The aggregated outputs its module lists in OUTPUTS (debiaseval.experiments.<name>) and the
    report's folders figures/ and tables/, which the same aggregate job writes.
    """
    targets = []
    for name in EXPERIMENTS:
        outputs = importlib.import_module(f"debiaseval.experiments.{name}").OUTPUTS
        for dataset in experiment_datasets(name):
            folder = results(f"{name}/{dataset}")
            targets += [f"{folder}/{output}" for output in [*outputs, "figures", "tables"]]
    return targets


def aggregate_tables():
    """The Parquet tables of every experiment and dataset the config runs that its aggregate
    job writes, each with the run's provenance record (called once every rule is defined)."""
    tables = []
    for name in EXPERIMENTS:
        outputs = [path for path in getattr(rules, f"{name}_aggregate").output
                   if path.endswith(".parquet")]  # fmt: skip
        tables += expand(outputs, dataset=experiment_datasets(name))
    return tables


def export_outputs(experiment):
    """The files of ``experiment``'s export rule: each part of its EXPORT
    (debiaseval.experiments.<name>) in raw ids, as ``<part>_parquet`` and ``<part>_csv``."""
    parts = importlib.import_module(f"debiaseval.experiments.{experiment}").EXPORT
    folder = results(f"{experiment}/{{dataset}}/export/seed{{seed}}")
    return {
        f"{part}_{kind}": f"{folder}/{part}.{kind}" for part in parts for kind in ("parquet", "csv")
    }


def export_targets():
    """Every exported split of the experiments the config runs that export theirs (E1, E5)."""
    targets = []
    for name in EXPERIMENTS:
        if not hasattr(importlib.import_module(f"debiaseval.experiments.{name}"), "EXPORT"):
            continue
        for dataset in experiment_datasets(name):
            for seed in experiment_seeds(name):
                targets += expand(export_outputs(name).values(), dataset=dataset, seed=seed)
    return targets


@functools.cache
def _provenance(experiment):
    return gather_provenance(config, experiment)


@functools.cache
def _dataset_provenance(experiment, dataset):
    return dataset_record(_provenance(experiment), dataset)


def provenance(experiment):
    """Params function: the stable provenance record of ``experiment``'s results on the job's
    dataset (debiaseval.workflow.provenance, gathered once per run and dataset: the config
    without what only other datasets read) naming the raw files of the dataset; the job takes
    their checksums and writes provenance.json (docs/report.md)."""

    def record(wildcards):
        inputs = sorted(str(path) for path in preprocess_input(wildcards).values())
        own = _dataset_provenance(experiment, wildcards.dataset)
        return {**own, "dataset": wildcards.dataset, "inputs": inputs}

    return record


def report_outputs(experiment):
    """The outputs every aggregate rule has beside its tables, as named outputs.

    ``provenance``: the run's provenance record (``provenance.json``, with its date and
    commit); ``figures/``: per figure an SVG, a PNG and an HTML page (the figure with its
    caption, in the report); ``tables/``: the experiment's Markdown tables as HTML pages, the
    verdict labelled to head its dataset's list in the report (``table_labels``). The
    rule's params must hold ``captions`` (figure name -> caption) for the report's
    descriptions and ``provenance`` (:func:`provenance`), and be given as ``params:
    **job_params(...)``, as every rule's (debiaseval.workflow.params): Snakemake tracks each
    mapping by a short digest, and the report shows it in a script block that no config
    string may close.
    """
    folder = results(f"{experiment}/{{dataset}}")
    category = figure_module(experiment).TITLE
    return {
        "provenance": f"{folder}/provenance.json",
        "figures": report(
            directory(f"{folder}/figures"),
            patterns=["{figure}.html"],
            caption="../report/figure.rst",
            category=category,
            subcategory="{dataset}",
            labels={"result": "{figure} (figure)", "dataset": "{dataset}"},
        ),
        "tables": report(
            directory(f"{folder}/tables"),
            patterns=["{table}.html"],
            caption="../report/table.rst",
            category=category,
            subcategory="{dataset}",
            labels=table_labels,  # the verdict first in its dataset's list
        ),
    }


def run_jobs():
    """The jobs this invocation runs, from Snakemake's DAG (for the onstart and onsuccess
    handlers, which Snakemake calls once the DAG is built)."""
    return list(workflow.dag.needrun_jobs(exclude_finished=False))


def check_data():
    """Stop before the first job, with one message, if the study's results folder (results/
    before its first run) is read-only or the run needs datasets that cannot be downloaded and
    have no local copy (resources/raw, the mirror, sources.<name>.path)."""
    read_only = read_only_message(RESULTS if os.path.isdir(RESULTS) else "results")
    if read_only:
        stop(read_only)
    fetched = {job.wildcards.dataset for job in run_jobs() if job.rule.name == "download"}
    needed = [name for name in SOURCES if name in fetched]  # in the registry's order
    missing = unobtainable(
        needed, raw_root="resources/raw", mirror=mirror(), sources=config["sources"]
    )
    if missing:
        stop(missing_data_message(config, missing))


def obtainable(wildcards):
    """Input function of the download rule: none. A run that needs a dataset nothing can fetch
    (manual-only, no local copy) stops here, while Snakemake plans its jobs, dry runs included,
    with check_data's message naming every such dataset the config uses."""
    if unobtainable([wildcards.dataset], raw_root="resources/raw", mirror=mirror(),
                    sources=config["sources"]):  # fmt: skip
        used = {SOURCE_OF.get(name, name) for name in _USED} | {wildcards.dataset}
        needed = [name for name in SOURCES if name in used]  # in the registry's order
        missing = unobtainable(
            needed, raw_root="resources/raw", mirror=mirror(), sources=config["sources"]
        )
        stop(missing_data_message(config, missing))
    return []


def run_message():
    """The end-of-run message: the results of the datasets whose outputs this run wrote (or,
    with --touch, only marked as up to date)."""
    written = [str(path) for job in run_jobs() for path in job.output]
    message = finished_message(written, EXPERIMENTS, STUDY, report_command(sys.argv),
                               touched=bool(workflow.touch))
    return inert_terminal(message, lines=True)


def e5_file(name):
    """Input function: E5's fully exposed data file ``name`` of the job's dataset and seed:
    e5_full's, or e5_full_draw's seed folder where the dataset is drawn per seed."""
    return seed_file(f"e5/{{dataset}}/seed{{seed}}/{name}", f"e5/{{dataset}}/{name}")


def e5_id_tables(wildcards):
    """The users and items tables of E5's ids: e5_full's on fully exposed data (the seed's own
    draw's where the dataset is drawn per seed), else the shared preprocessing's."""
    if wildcards.dataset not in FULLY_EXPOSED:
        return {
            "user_index": data_file("users.parquet")(wildcards),
            "item_index": data_file("items.parquet")(wildcards),
        }
    return {
        "user_index": e5_file("users.parquet")(wildcards),
        "item_index": e5_file("items.parquet")(wildcards),
    }


def e5_evaluate_input(wildcards):
    """The seed's exposure; for precomputed lists (algorithm external) also the lists file
    and the id tables that map its raw ids."""
    seed = f"e5/{wildcards.dataset}/seed{wildcards.seed}"
    inputs = {"exposure": results(f"{seed}/exposure.parquet")}
    if config["e5"]["models"][wildcards.model]["algorithm"] == EXTERNAL:
        inputs["lists"] = lists_input("e5", "models", "model")(wildcards)
        inputs.update(e5_id_tables(wildcards))
    return inputs
