"""Checks of tests/slurm/e2e.sh: every non-local job of a Snakemake run went through sbatch.

    python check_run.py RUN_LOG JOBCOMP SQUEUE SLURM_LOGDIR CONFIG [LOCAL_RULE ...]

RUN_LOG is Snakemake's output of the cluster run, JOBCOMP SLURM's job completion log
(jobcomp/filetxt), SQUEUE the output of `squeue -h --states=all -o '%i|%T|%k'`, SLURM_LOGDIR
the plugin's log folder (.snakemake/slurm_logs, kept with --slurm-keep-successful-logs) and
CONFIG the run's config file. Checked: Snakemake reported one SLURM job id per job of the DAG
outside the local rules, no such rule ran locally; SLURM's completion log and squeue hold
exactly those ids, all COMPLETED, squeue's comments naming the same rules; SLURM allocated each
job the threads, mem_mb and runtime Snakemake gave it, which for the rules of the config's
`resources:` block are the config's values; the plugin wrote one log per job. Prints one
summary line; exits 1 with the reasons otherwise.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import yaml

RULE_LINE = re.compile(r"^(local)?(rule|checkpoint) (\w+):$")
SUBMITTED = re.compile(r"^Job (\d+) has been submitted with SLURM jobid (\d+) ")


def snakemake_jobs(run_log: str) -> tuple[dict[str, dict], dict[str, str], Counter]:
    """Jobs of the run log by Snakemake jobid, SLURM id by jobid, and the 'Job stats' table."""
    jobs: dict[str, dict] = {}
    current: dict | None = None
    submitted: dict[str, str] = {}
    stats: Counter = Counter()
    lines = run_log.splitlines()
    for i, line in enumerate(lines):
        match = RULE_LINE.match(line)
        if match:
            current = {"rule": match.group(3), "local": bool(match.group(1)), "threads": 1}
            continue
        if current is not None and line.startswith("    ") and ": " in line:
            key, value = line.strip().split(": ", 1)
            if key == "jobid":
                jobs[value] = current
            elif key == "threads":
                current["threads"] = int(value)
            elif key == "resources":
                for item in value.split(", "):
                    name, _, val = item.partition("=")
                    if name in ("mem_mb", "runtime"):
                        current[name] = int(val)
            continue
        current = None
        match = SUBMITTED.match(line)
        if match:
            submitted.setdefault(match.group(1), match.group(2))
            if submitted[match.group(1)] != match.group(2):
                raise SystemExit(f"FAIL: Snakemake job {match.group(1)} submitted twice")
        if line == "Job stats:" and not stats:
            for row in lines[i + 1 :]:
                parts = row.split()
                if parts and parts[0] == "total":
                    break
                if len(parts) == 2 and parts[1].isdigit():
                    stats[parts[0]] = int(parts[1])
    return jobs, submitted, stats


def jobcomp_records(text: str) -> dict[str, dict[str, str]]:
    records = {}
    for line in text.splitlines():
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        if "JobId" in fields:
            records[fields["JobId"]] = fields
    return records


def ids(values) -> list[str]:
    return sorted(values, key=int)


def mb(value: str) -> int:
    """SLURM memory like 500M or 2G in MB."""
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)", value).groups()
    return round(float(number) * {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2}[unit])


def main(run_log_path, jobcomp_path, squeue_path, slurm_logdir, config_path, *local_rules):
    errors: list[str] = []
    jobs, submitted, stats = snakemake_jobs(Path(run_log_path).read_text())
    local_rules = set(local_rules)
    if not stats:
        raise SystemExit("FAIL: no 'Job stats' table in the cluster run's output")
    expected = {rule: n for rule, n in stats.items() if rule not in local_rules}
    if not expected:
        raise SystemExit("FAIL: the DAG has no job for SLURM")
    for rule in local_rules & set(stats):
        ran_local = sum(1 for job in jobs.values() if job["rule"] == rule and job["local"])
        if ran_local != stats[rule]:
            errors.append(f"local rule {rule}: {stats[rule]} jobs, {ran_local} ran locally")

    # Snakemake's view: one SLURM id per job of a non-local rule, none for local ones.
    remote = {jobid: job for jobid, job in jobs.items() if job["rule"] not in local_rules}
    for jobid, job in remote.items():
        if job["local"]:
            errors.append(f"job {jobid} of rule {job['rule']} ran as a local rule")
        if jobid not in submitted:
            errors.append(f"job {jobid} of rule {job['rule']} was not submitted to SLURM")
    for jobid in submitted:
        if jobid not in remote:
            errors.append(f"Snakemake job {jobid} was submitted but is not a job of a SLURM rule")
    per_rule = Counter(job["rule"] for job in remote.values())
    if per_rule != Counter(expected):
        errors.append(f"jobs per rule: DAG {dict(expected)}, run {dict(per_rule)}")

    # SLURM's view: completion records and squeue records of exactly those ids.
    records = jobcomp_records(Path(jobcomp_path).read_text())
    slurm_ids = set(submitted.values())
    if set(records) != slurm_ids:
        errors.append(f"SLURM ids: Snakemake {ids(slurm_ids)}, jobcomp {ids(records)}")
    if len({r.get("Name") for r in records.values()}) > 1:
        errors.append("jobs of more than one Snakemake run in SLURM's records")
    squeue = {}
    for line in Path(squeue_path).read_text().splitlines():
        slurm_id, state, comment = line.split("|", 2)
        squeue[slurm_id] = (state, comment)
    if set(squeue) != slurm_ids:
        errors.append(f"SLURM ids: Snakemake {ids(slurm_ids)}, squeue {ids(squeue)}")

    config_resources = (yaml.safe_load(Path(config_path).read_text()) or {}).get("resources", {})
    for jobid, job in remote.items():
        slurm_id = submitted.get(jobid)
        if slurm_id is None:
            continue
        record = records.get(slurm_id, {})
        state, comment = squeue.get(slurm_id, ("missing", ""))
        what = f"job {jobid} ({job['rule']}, SLURM {slurm_id})"
        if record.get("JobState") != "COMPLETED" or state != "COMPLETED":
            errors.append(f"{what}: state {record.get('JobState')} in jobcomp, {state} in squeue")
        rule_in_comment = re.sub(r"_wildcards_.*", "", comment.removeprefix("rule_"))
        if rule_in_comment != job["rule"]:
            errors.append(f"{what}: squeue comment {comment!r}")
        tres = dict(item.split("=", 1) for item in record.get("Tres", "").split(",") if "=" in item)
        allocated = {
            "threads": int(tres.get("cpu", 0)),
            "mem_mb": mb(tres["mem"]) if "mem" in tres else None,
            "runtime": int(record["TimeLimit"]) if record.get("TimeLimit", "").isdigit() else None,
        }
        asked = {key: job.get(key) for key in allocated}
        if allocated != asked:
            errors.append(f"{what}: Snakemake asked {asked}, SLURM allocated {allocated}")
        configured = config_resources.get(re.sub(r"^e\d+_", "", job["rule"]), {})  # e1_train: train
        for key, value in configured.items():
            if job.get(key) != value:
                errors.append(f"{what}: {key} is {job.get(key)}, the config says {value}")

    logs = sorted(Path(slurm_logdir).rglob("*.log"))
    if ids(p.stem for p in logs) != ids(slurm_ids):
        errors.append(f"SLURM job logs {[str(p) for p in logs]} for jobs {ids(slurm_ids)}")

    if errors:
        print("FAIL: the cluster run's jobs are not what was asked of SLURM:")
        print("\n".join(f"  {error}" for error in errors))
        return 1
    rules = ", ".join(f"{rule} {n}" for rule, n in sorted(expected.items()))
    print(f"sbatch: {len(submitted)} jobs, all COMPLETED with the resources asked ({rules})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 6:
        raise SystemExit(__doc__)
    sys.exit(main(*sys.argv[1:]))
