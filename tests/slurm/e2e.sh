#!/usr/bin/env bash
# End-to-end test of the SLURM profile (profiles/slurm) against a real one-node SLURM cluster.
#
#   tests/slurm/e2e.sh [SNAKEMAKE]      # run as root; SNAKEMAKE defaults to .venv/bin/snakemake
#
# 1. Installs Debian's slurm-wlm and munge with apt-get if they are missing.
# 2. Starts, in a fresh temporary folder, munged (own key and socket), slurmctld and slurmd
#    for one node "localhost" on 127.0.0.1 with the machine's CPUs (at least 2) and 80% of its
#    memory and one partition, without accounting (no slurmdbd), on free TCP ports.
# 3. Runs the workflow on a small E1 config twice, in two copies of the workflow: locally
#    with `--cores 8` and with `--profile profiles/slurm`; Snakemake runs under
#    `timeout -s INT` and gets SIGINT when the test is interrupted, so that it cancels its
#    SLURM jobs (SIGTERM would not).
# 4. Checks that every non-local job of the DAG went through sbatch (Snakemake's submission
#    lines, SLURM's job completion records, squeue's job records and the plugin's logs agree,
#    one per job, all COMPLETED, with the threads, memory and time asked; check_run.py) and that
#    results/cluster/ (the study) of both runs is byte-identical.
# 5. On exit (EXIT trap): cancels any job left, stops slurmd, slurmctld and munged by their
#    PIDs, checks that no process started by the test is left and removes the folder.
#
# Exit status: 0 passed, 77 skipped (the reason on a line starting with "SKIP:"), other failed.
# Environment: CLUSTER_CONFIG (config file, default tests/configs/cluster.yaml),
# SLURM_E2E_RUN_TIMEOUT (seconds for each workflow run, default 300),
# SLURM_E2E_KEEP=1 (keep the temporary folder), TMPDIR.
set -euo pipefail

START=$SECONDS
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SNAKEMAKE=${1:-${SNAKEMAKE:-$ROOT/.venv/bin/snakemake}}
CLUSTER_CONFIG=${CLUSTER_CONFIG:-$ROOT/tests/configs/cluster.yaml}
PROFILE=$ROOT/profiles/slurm
RUN_TIMEOUT=${SLURM_E2E_RUN_TIMEOUT:-300}
LOCAL_RULES="all e1_data e1_dropped e1_select e1_aggregate download run_config" # rules that never go to SLURM

say() { echo "[slurm-e2e +$((SECONDS - START))s] $*"; }
skip() {
    echo "SKIP: $*"
    exit 77
}
fail() {
    echo "FAIL: $*"
    exit 1
}

# ---------------------------------------------------------------------------------------------
# Preconditions: what is missing here makes the test skip, saying why.
[ "$(uname -s)" = Linux ] || skip "SLURM test cluster needs Linux (this is $(uname -s))"
[ "$(id -u)" = 0 ] ||
    skip "needs root to install SLURM with apt-get and run slurmctld/slurmd/munged"
command -v timeout > /dev/null || skip "the 'timeout' command (coreutils) is not available"
[ -x "$SNAKEMAKE" ] || fail "no snakemake executable at $SNAKEMAKE"
PYTHON=$(dirname "$SNAKEMAKE")/python
[ -x "$PYTHON" ] || fail "no python next to $SNAKEMAKE"
"$PYTHON" -c "import snakemake_executor_plugin_slurm" 2> /dev/null ||
    skip "snakemake-executor-plugin-slurm is not installed in $(dirname "$SNAKEMAKE")" \
        "(pip install -e '.[slurm]')"
[ -f "$PROFILE/config.yaml" ] || fail "no profile at $PROFILE/config.yaml"

SLURM_BINARIES="munged munge unmunge slurmctld slurmd sbatch squeue sinfo scontrol scancel srun"
missing() {
    local b
    for b in $SLURM_BINARIES; do command -v "$b" > /dev/null || return 0; done
    return 1
}
if missing; then
    command -v apt-get > /dev/null ||
        skip "SLURM is not installed and there is no apt-get to install it"
    say "installing slurm-wlm and munge with apt-get"
    apt_or_skip() { # apt_or_skip ARGS...: apt-get ARGS, or skip the test with apt's last words
        local out
        out=$(DEBIAN_FRONTEND=noninteractive timeout 600 apt-get "$@" 2>&1) ||
            skip "apt-get $* failed: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    }
    policy=$(apt-cache policy slurm-wlm 2> /dev/null || true)
    [[ $policy == *"Candidate: "[0-9]* ]] || apt_or_skip update -qq
    apt_or_skip install -y -qq --no-install-recommends slurm-wlm munge
    missing && skip "slurm-wlm and munge installed, but one of: $SLURM_BINARIES is missing"
    say "installed" $(dpkg-query -W -f '${Package}=${Version} ' slurm-wlm munge 2> /dev/null)
fi
PLUGIN_VERSION=$("$PYTHON" -c 'import importlib.metadata as m
print(m.version("snakemake-executor-plugin-slurm"))')
say "$(slurmctld -V), snakemake $("$SNAKEMAKE" --version | head -n 1), plugin $PLUGIN_VERSION"

# ---------------------------------------------------------------------------------------------
# The cluster: everything lives in $TMP; daemons are stopped by PID in the EXIT trap.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/slurm-e2e.XXXXXX")
chmod 711 "$TMP" # munged wants every folder above its socket searchable by all
mkdir -p "$TMP"/{munge,etc,state,spool,log,run,work,bin}
export SLURM_CONF=$TMP/etc/slurm.conf # every SLURM command of the test and its jobs uses this
# Inside a job the plugin's job step (snakemake-executor-plugin-slurm-jobstep 0.6) drops every
# SLURM_* variable but the job's ids before calling `srun`, SLURM_CONF too; a real cluster has
# its config at /etc/slurm/slurm.conf. This srun, first on the PATH, brings it back, leaving /etc
# alone.
cat > "$TMP/bin/srun" << EOF
#!/bin/sh
SLURM_CONF='$SLURM_CONF' exec '$(command -v srun)' "\$@"
EOF
chmod 755 "$TMP/bin/srun"
export PATH=$TMP/bin:$PATH
MUNGE_SOCKET=$TMP/munge/munge.socket.2
MUNGED_PID="" CTLD_PID="" SLURMD_PID="" RUN_PID=""

alive() { [ -n "$1" ] && kill -0 "$1" 2> /dev/null; }
stop_pid() { # stop_pid NAME PID: SIGTERM, wait up to 15 s, then SIGKILL
    local name=$1 pid=$2 i
    alive "$pid" || return 0
    kill -TERM "$pid" 2> /dev/null || true
    for i in $(seq 1 30); do
        alive "$pid" || break
        sleep 0.5
    done
    if alive "$pid"; then
        echo "[slurm-e2e] $name ($pid) ignored SIGTERM, sending SIGKILL"
        kill -KILL "$pid" 2> /dev/null || true
    fi
    wait "$pid" 2> /dev/null || true
}
# Processes started by the test: the daemons and every process that inherited our SLURM_CONF or
# MUNGE socket (slurmstepd, job steps, Snakemake), found through /proc/PID/environ and cmdline.
our_processes() {
    local d pid
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] && continue
        if tr '\0' '\n' 2> /dev/null < "$d/environ" | grep -qxF "SLURM_CONF=$SLURM_CONF" ||
            tr '\0' ' ' 2> /dev/null < "$d/cmdline" | grep -qF "$TMP/"; then
            echo "$pid"
        fi
    done
}
cleanup() {
    local status=$? pids pid
    trap - EXIT INT TERM
    set +e
    if alive "$RUN_PID"; then # interrupted during a run: SIGINT, so that it cancels its jobs
        echo "[slurm-e2e] interrupting Snakemake"
        kill -INT "$RUN_PID" 2> /dev/null
        for _ in $(seq 1 180); do
            alive "$RUN_PID" || break
            sleep 0.5
        done
        stop_pid snakemake "$RUN_PID"
    fi
    if alive "$CTLD_PID"; then
        pids=$(squeue -h -o %i 2> /dev/null)
        if [ -n "$pids" ]; then
            echo "[slurm-e2e] cancelling SLURM jobs left: $(echo $pids)"
            scancel $pids 2> /dev/null
            for _ in $(seq 1 20); do
                [ -z "$(squeue -h -t PD,R,CG -o %i 2> /dev/null)" ] && break
                sleep 0.5
            done
        fi
    fi
    stop_pid slurmd "$SLURMD_PID"
    stop_pid slurmctld "$CTLD_PID"
    stop_pid munged "$MUNGED_PID"
    pids=$(our_processes)
    if [ -n "$pids" ]; then
        echo "FAIL: processes started by the test were still running, killed:"
        for pid in $pids; do
            echo "  $pid $(tr '\0' ' ' < "/proc/$pid/cmdline" 2> /dev/null | cut -c1-150)"
            kill -KILL "$pid" 2> /dev/null
        done
        [ "$status" = 0 ] && status=1
    else
        echo "[slurm-e2e] daemons stopped, no process of the test left running"
    fi
    if [ "${SLURM_E2E_KEEP:-0}" = 1 ]; then
        echo "[slurm-e2e] kept $TMP"
    else
        rm -rf "$TMP"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

show_logs() { # show_logs [FILE ...]: the tails of the given files and of the daemons' logs
    local f
    for f in "$@"; do
        [ -s "$f" ] && echo "----- tail of $f" && tail -n 60 "$f"
    done
    for f in "$TMP"/log/*.log; do
        [ -s "$f" ] && echo "----- tail of $f" && tail -n 15 "$f"
    done
    return 0
}
die() { # die MESSAGE [FILE ...]
    local message=$1
    shift
    echo "FAIL: $message"
    show_logs "$@"
    exit 1
}

# Two free TCP ports on 127.0.0.1 for slurmctld and slurmd.
read -r CTLD_PORT SLURMD_PORT < <("$PYTHON" -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
')
CPUS=$(nproc)
[ "$CPUS" -ge 2 ] || CPUS=2 # config_overrides below lets the node offer what slurm.conf says
MEM_MB=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.8 }' /proc/meminfo)
[ "$MEM_MB" -ge 2000 ] || MEM_MB=2000

cat > "$SLURM_CONF" << EOF
# One-node test cluster of tests/slurm/e2e.sh; nothing outside $TMP.
ClusterName=e2e
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/run/slurmctld.pid
SlurmdPidFile=$TMP/run/slurmd.pid
SlurmctldLogFile=$TMP/log/slurmctld.log
SlurmdLogFile=$TMP/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
# SLURM's own record of every finished job (no slurmdbd needed).
JobCompType=jobcomp/filetxt
JobCompLoc=$TMP/log/jobcomp.txt
# Keep finished jobs visible to squeue (the profile's status command) for 5 minutes.
MinJobAge=300
ReturnToService=2
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=5
Waittime=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF

# munged with its own key and socket in $TMP.
dd if=/dev/urandom of="$TMP/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$TMP/munge/munge.key"
munged --foreground --socket="$MUNGE_SOCKET" --key-file="$TMP/munge/munge.key" \
    --pid-file="$TMP/run/munged.pid" --log-file="$TMP/log/munged.log" \
    --seed-file="$TMP/munge/munged.seed" > "$TMP/log/munged.out" 2>&1 &
MUNGED_PID=$!
for _ in $(seq 1 50); do
    [ -S "$MUNGE_SOCKET" ] && break
    alive "$MUNGED_PID" || die "munged exited"
    sleep 0.1
done
munge -n -S "$MUNGE_SOCKET" | unmunge -S "$MUNGE_SOCKET" > /dev/null || die "munge does not work"

slurmctld -D -i > "$TMP/log/slurmctld.out" 2>&1 &
CTLD_PID=$!
slurmd -D -N localhost > "$TMP/log/slurmd.out" 2>&1 &
SLURMD_PID=$!
state=""
for _ in $(seq 1 60); do
    alive "$CTLD_PID" || die "slurmctld exited"
    alive "$SLURMD_PID" || die "slurmd exited"
    state=$(sinfo -h -N -o %T 2> /dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
done
if [ "$state" != idle ]; then
    reason=$(scontrol show node localhost 2>&1 | grep -i reason || true)
    die "node not idle after 30 s (state '$state'): $reason"
fi
say "cluster up: slurmctld $CTLD_PID, slurmd $SLURMD_PID, munged $MUNGED_PID; node localhost" \
    "with $CPUS CPUs, $MEM_MB MB; ports $CTLD_PORT/$SLURMD_PORT"

# ---------------------------------------------------------------------------------------------
# The workflow, locally and on the cluster, each in its own copy.
make_workdir() {
    mkdir -p "$1"
    cp "$ROOT/Snakefile" "$1/"
    cp -r "$ROOT/workflow" "$ROOT/config" "$ROOT/profiles" "$1/"
    cp "$CLUSTER_CONFIG" "$1/cluster.yaml"
}
make_workdir "$TMP/work/local"
make_workdir "$TMP/work/cluster"

# run LOG DIR ARGS...: Snakemake with ARGS in DIR, output to LOG, interrupted with SIGINT after
# $RUN_TIMEOUT s. Waited for with `wait`, so that the traps run at once on INT or TERM.
run() {
    local log=$1 dir=$2 status=0
    shift 2
    (cd "$dir" && exec timeout -s INT -k 60 "$RUN_TIMEOUT" "$SNAKEMAKE" "$@") > "$log" 2>&1 &
    RUN_PID=$!
    wait "$RUN_PID" || status=$?
    RUN_PID=""
    return "$status"
}

say "local run: snakemake --cores 8 --configfile cluster.yaml"
t0=$SECONDS
run "$TMP/log/local-run.txt" "$TMP/work/local" --cores 8 --configfile cluster.yaml ||
    die "local run failed" "$TMP/log/local-run.txt"
LOCAL_SECONDS=$((SECONDS - t0))

say "cluster run: snakemake --profile profiles/slurm --configfile cluster.yaml"
t0=$SECONDS
# The test cluster's only deviations from the profile: status checks from 2 s on (the
# profile's 10 s would add waiting to each of the DAG's levels) and SLURM logs kept as evidence.
rc=0
run "$TMP/log/cluster-run.txt" "$TMP/work/cluster" --profile "$PROFILE" --configfile cluster.yaml \
    --slurm-init-seconds-before-status-checks 2 --slurm-keep-successful-logs || rc=$?
CLUSTER_SECONDS=$((SECONDS - t0))
[ "$rc" = 124 ] &&
    die "cluster run did not finish within ${RUN_TIMEOUT}s (interrupted)" "$TMP/log/cluster-run.txt"
[ "$rc" = 0 ] || die "cluster run failed (exit $rc)" "$TMP/log/cluster-run.txt"
say "cluster run finished in ${CLUSTER_SECONDS}s (local run ${LOCAL_SECONDS}s)"

# ---------------------------------------------------------------------------------------------
# Every job of the DAG but the local rules went through sbatch, once, completed, and was given
# the threads, memory and time the rule asks for (tests/slurm/check_run.py).
squeue -h --states=all -o '%i|%T|%k' > "$TMP/log/squeue.txt"
touch "$TMP/log/jobcomp.txt"
CHECK=$("$PYTHON" "$ROOT/tests/slurm/check_run.py" "$TMP/log/cluster-run.txt" \
    "$TMP/log/jobcomp.txt" "$TMP/log/squeue.txt" "$TMP/work/cluster/.snakemake/slurm_logs" \
    "$CLUSTER_CONFIG" $LOCAL_RULES 2>&1) ||
    die "${CHECK#FAIL: }" "$TMP/log/cluster-run.txt"
say "$CHECK"
SUBMITTED=$(grep -c 'has been submitted with SLURM jobid' "$TMP/log/cluster-run.txt")

# ---------------------------------------------------------------------------------------------
# Same results, byte for byte: the study's folder (cluster.yaml's stem names the study).
N_FILES=$(find "$TMP/work/local/results/cluster" -type f | wc -l)
[ "$N_FILES" -gt 0 ] || die "the local run wrote no results under results/cluster/"
# provenance.json records each run's date (docs/report.md#provenance): it differs by design.
if ! diff -r -q -x provenance.json "$TMP/work/local/results" "$TMP/work/cluster/results" \
    > "$TMP/log/results-diff.txt"; then
    die "results differ between the local and the cluster run: $(cat "$TMP/log/results-diff.txt")"
fi
say "results/cluster/: $N_FILES files, byte-identical (provenance.json aside) between --cores 8 and --profile profiles/slurm"
echo "SLURM-E2E: passed; sbatch_jobs=$SUBMITTED cluster_run_s=$CLUSTER_SECONDS" \
    "local_run_s=$LOCAL_SECONDS wall_s=$((SECONDS - START))"
