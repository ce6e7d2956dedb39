"""The workflow on a real one-node SLURM cluster with profiles/slurm, against a local run.

tests/slurm/e2e.sh installs Debian's slurm-wlm and munge if needed, starts munged, slurmctld
and slurmd in a temporary folder, runs a small E1 study with `--profile profiles/slurm` and
with `--cores 8`, checks that every non-local job went through sbatch and that the results are
byte-identical, and stops the daemons. It changes the system, so it runs only when
DEBIASEVAL_TEST_SLURM=1 (which .ci/run sets); it needs root and apt-get (or SLURM already
installed); elsewhere this test skips, saying why.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "slurm" / "e2e.sh"
SKIPPED = 77  # the script's exit status when the machine cannot run the test cluster
# Seconds. The script bounds its own steps (apt-get 600 s each, each workflow run 300 s, plus
# the cleanup); this is the last resort.
TIMEOUT = 1800
OPT_IN = "DEBIASEVAL_TEST_SLURM"
OPT_IN_REASON = (
    f"set {OPT_IN}=1 to run the real SLURM test "
    "(as root it apt-installs slurm-wlm and munge and starts their daemons)"
)

pytestmark = pytest.mark.slow


def _stop(proc: subprocess.Popen) -> str:
    """Stop the script: on SIGTERM its EXIT trap cancels the jobs and stops the daemons (once
    its foreground command, bounded by `timeout`, has ended); SIGKILL as the last resort."""
    proc.terminate()
    try:
        return proc.communicate(timeout=600)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.communicate()[0]


def test_workflow_on_slurm_cluster_matches_local_run():
    if os.environ.get(OPT_IN) != "1":
        pytest.skip(OPT_IN_REASON)
    if not sys.platform.startswith("linux"):
        pytest.skip(f"the SLURM test cluster needs Linux, this is {sys.platform}")
    if os.geteuid() != 0:
        pytest.skip("the SLURM test cluster needs root (apt-get, slurmctld, slurmd, munged)")
    if shutil.which("timeout") is None:
        pytest.skip("the SLURM test needs the 'timeout' command (coreutils)")
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        pytest.skip("SLURM is not installed and there is no apt-get to install slurm-wlm")
    snakemake = Path(sys.executable).parent / "snakemake"
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), str(snakemake)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tests/slurm/e2e.sh did not finish within {TIMEOUT}s:\n{_stop(proc)}")
    except BaseException:  # Ctrl-C: stop the cluster too
        _stop(proc)
        raise
    if proc.returncode == SKIPPED:
        reasons = [line for line in output.splitlines() if line.startswith("SKIP: ")]
        pytest.skip(reasons[-1].removeprefix("SKIP: ") if reasons else output[-500:])
    assert proc.returncode == 0, f"tests/slurm/e2e.sh failed (exit {proc.returncode}):\n{output}"
    summary = [line for line in output.splitlines() if line.startswith("SLURM-E2E: passed")]
    assert summary, output
    assert "no process of the test left running" in output, output
    print(output)


def test_slurm_test_is_opt_in(monkeypatch):
    """Without the opt-in the real test skips at once, changing nothing; CI opts in."""
    monkeypatch.delenv(OPT_IN, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        test_workflow_on_slurm_cluster_matches_local_run()
    assert skipped.value.msg == OPT_IN_REASON
    assert f"export {OPT_IN}=1" in (ROOT / ".ci" / "run").read_text().splitlines()
