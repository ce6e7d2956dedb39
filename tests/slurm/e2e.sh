#!/usr/bin/env bash
# End-to-end test of the SLURM profile (profiles/slurm) against a real one-node SLURM cluster.
#
#   tests/slurm/e2e.sh [SNAKEMAKE]      # run as root; SNAKEMAKE defaults to .venv/bin/snakemake
#
# 1. Installs Debian's slurm-wlm and munge with apt-get if they are missing.
# 2. Starts, in a fresh temporary folder, munged (own key and socket), slurmctld and slurmd
#    for one node "localhost" on 127.0.0.1 with the machine's CPUs and memory and one
#    partition, without accounting (no slurmdbd) and with free TCP ports.
# 3. Runs the workflow on a small E1 config twice, in two copies of the workflow: locally
#    with `--cores 8` and with `--profile profiles/slurm` (Snakemake in the foreground under
#    `timeout -s INT`, so that on a hang it cancels its SLURM jobs).
# 4. Checks that every non-local job of the DAG went through sbatch (Snakemake's submission
#    lines, SLURM's job completion records and squeue's job records agree, one per job, all
#    COMPLETED) and that results/ of both runs is byte-identical.
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
LOCAL_RULES="all aggregate download"   # rules that never go to SLURM

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
[ "$(id -u)" = 0 ] || skip "needs root to install SLURM with apt-get and run slurmctld/slurmd/munged"
command -v timeout > /dev/null || skip "the 'timeout' command (coreutils) is not available"
[ -x "$SNAKEMAKE" ] || fail "no snakemake executable at $SNAKEMAKE"
PYTHON=$(dirname "$SNAKEMAKE")/python
[ -x "$PYTHON" ] || fail "no python next to $SNAKEMAKE"
"$PYTHON" -c "import snakemake_executor_plugin_slurm" 2> /dev/null ||
    skip "snakemake-executor-plugin-slurm is not installed in $(dirname "$SNAKEMAKE") (pip install -e '.[slurm]')"
[ -f "$PROFILE/config.yaml" ] || fail "no profile at $PROFILE/config.yaml"

SLURM_BINARIES="munged munge unmunge slurmctld slurmd sbatch squeue sinfo scontrol scancel srun"
missing() {
    local b
    for b in $SLURM_BINARIES; do command -v "$b" > /dev/null || return 0; done
    return 1
}
if missing; then
    command -v apt-get > /dev/null || skip "SLURM is not installed and there is no apt-get to install it"
    say "installing slurm-wlm and munge with apt-get"
    if ! apt-cache policy slurm-wlm 2> /dev/null | grep -q 'Candidate: [0-9]'; then
        apt-get update -qq > /tmp/slurm-e2e-apt-update.log 2>&1 ||
            skip "apt-get update failed: $(tail -n 3 /tmp/slurm-e2e-apt-update.log | tr '\n' ' ')"
    fi
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurm-wlm munge > /tmp/slurm-e2e-apt.log 2>&1; then
        skip "apt-get install slurm-wlm munge failed: $(tail -n 3 /tmp/slurm-e2e-apt.log | tr '\n' ' ')"
    fi
    missing && skip "slurm-wlm and munge installed, but one of: $SLURM_BINARIES is missing"
    say "installed $(dpkg-query -W -f '${Package} ${Version}, ' slurm-wlm munge 2> /dev/null)"
fi
say "$(slurmctld -V), $("$SNAKEMAKE" --version | head -n 1 | sed 's/^/snakemake /'), plugin $(
    "$PYTHON" -c 'import importlib.metadata as m; print(m.version("snakemake-executor-plugin-slurm"))'
)"

# ---------------------------------------------------------------------------------------------
# The cluster: everything lives in $TMP; daemons are stopped by PID in the EXIT trap.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/slurm-e2e.XXXXXX")
chmod 700 "$TMP"
mkdir -p "$TMP"/{munge,etc,state,spool,log,run,work}
export SLURM_CONF=$TMP/etc/slurm.conf # every SLURM command of the test and its jobs uses this
MUNGE_SOCKET=$TMP/munge/munge.socket.2
MUNGED_PID="" CTLD_PID="" SLURMD_PID=""

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
        if tr '\0' '\n' < "$d/environ" 2> /dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF" ||
            tr '\0' ' ' < "$d/cmdline" 2> /dev/null | grep -qF "$TMP/"; then
            echo "$pid"
        fi
    done
}
cleanup() {
    local status=$? pids pid
    trap - EXIT INT TERM
    set +e
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

show_logs() {
    local f
    for f in "$TMP"/log/*.log "$@"; do
        [ -s "$f" ] || continue
        echo "----- tail of $f"
        tail -n 40 "$f"
    done
}
die() {
    echo "FAIL: $*"
    show_logs
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
[ "$state" = idle ] || die "node not idle after 30 s (state '$state'): $(scontrol show node localhost 2>&1 | grep -i reason)"
say "cluster up: slurmctld $CTLD_PID, slurmd $SLURMD_PID, munged $MUNGED_PID; node localhost" \
    "with $CPUS CPUs, $MEM_MB MB; ports $CTLD_PORT/$SLURMD_PORT"

# ---------------------------------------------------------------------------------------------
# The workflow, locally and on the cluster, each in its own copy.
make_workdir() {
    mkdir -p "$1"
    cp "$ROOT/Snakefile" "$1/"
    cp -r "$ROOT/workflow" "$ROOT/config" "$1/"
    cp "$CLUSTER_CONFIG" "$1/cluster.yaml"
}
make_workdir "$TMP/work/local"
make_workdir "$TMP/work/cluster"

say "local run: snakemake --cores 8 --configfile cluster.yaml"
t0=$SECONDS
(cd "$TMP/work/local" && timeout -s INT -k 30 "$RUN_TIMEOUT" \
    "$SNAKEMAKE" --cores 8 --configfile cluster.yaml) > "$TMP/log/local-run.txt" 2>&1 ||
    die "local run failed" "$TMP/log/local-run.txt"
LOCAL_SECONDS=$((SECONDS - t0))

say "cluster run: snakemake --profile profiles/slurm --configfile cluster.yaml"
t0=$SECONDS
# The test cluster's only deviations from the profile: status checks from 2 s on (the
# profile's 10 s would add waiting to each of the DAG's levels) and SLURM logs kept as evidence.
set +e
(cd "$TMP/work/cluster" && timeout -s INT -k 60 "$RUN_TIMEOUT" \
    "$SNAKEMAKE" --profile "$PROFILE" --configfile cluster.yaml \
    --slurm-init-seconds-before-status-checks 2 --slurm-keep-successful-logs) \
    > "$TMP/log/cluster-run.txt" 2>&1
rc=$?
set -e
CLUSTER_SECONDS=$((SECONDS - t0))
[ "$rc" = 124 ] && die "cluster run did not finish within ${RUN_TIMEOUT}s (interrupted)" "$TMP/log/cluster-run.txt"
[ "$rc" = 0 ] || die "cluster run failed (exit $rc)" "$TMP/log/cluster-run.txt"
say "cluster run finished in ${CLUSTER_SECONDS}s (local run ${LOCAL_SECONDS}s)"

# ---------------------------------------------------------------------------------------------
# Every job of the DAG but the local rules went through sbatch, once, and completed.
RUN_LOG=$TMP/log/cluster-run.txt
# "Job stats" table of the run: rule count
awk '/^Job stats:/ { on = 1; next } on && /^total/ { exit } on && NF == 2 && $2 ~ /^[0-9]+$/ { print $1, $2 }' \
    "$RUN_LOG" | sort > "$TMP/log/expected-rules.txt"
[ -s "$TMP/log/expected-rules.txt" ] || die "no 'Job stats' table in the cluster run's output" "$RUN_LOG"
grep -q '^aggregate ' "$TMP/log/expected-rules.txt" || die "no aggregate job in the cluster run" "$RUN_LOG"
for r in $LOCAL_RULES; do
    sed -i "/^$r /d" "$TMP/log/expected-rules.txt"
done
EXPECTED=$(awk '{ n += $2 } END { print n + 0 }' "$TMP/log/expected-rules.txt")
[ "$EXPECTED" -gt 0 ] || die "no job for SLURM in the DAG"

# Snakemake's own record: "Job N has been submitted with SLURM jobid M (log: ...)".
grep -o 'has been submitted with SLURM jobid [0-9]*' "$RUN_LOG" | awk '{ print $NF }' | sort -n \
    > "$TMP/log/submitted-ids.txt"
SUBMITTED=$(wc -l < "$TMP/log/submitted-ids.txt")
[ "$SUBMITTED" = "$EXPECTED" ] ||
    die "Snakemake submitted $SUBMITTED jobs to SLURM, the DAG has $EXPECTED non-local jobs" "$RUN_LOG"
[ -z "$(uniq -d "$TMP/log/submitted-ids.txt")" ] || die "a SLURM job id was reported twice" "$RUN_LOG"
grep -Eq '^localrule (preprocess|split|intervene|train|evaluate):' "$RUN_LOG" &&
    die "a rule meant for SLURM ran as a local rule" "$RUN_LOG"

# SLURM's records: the job completion log (one line per finished job) ...
[ -s "$TMP/log/jobcomp.txt" ] || die "SLURM wrote no job completion record"
sed -n 's/^JobId=\([0-9]*\) .*/\1/p' "$TMP/log/jobcomp.txt" | sort -n > "$TMP/log/jobcomp-ids.txt"
diff "$TMP/log/submitted-ids.txt" "$TMP/log/jobcomp-ids.txt" > /dev/null ||
    die "job ids of Snakemake ($(echo $(cat "$TMP/log/submitted-ids.txt"))) and SLURM's completion log ($(echo $(cat "$TMP/log/jobcomp-ids.txt"))) differ"
NOT_COMPLETED=$(grep -vc ' JobState=COMPLETED ' "$TMP/log/jobcomp.txt" || true)
[ "$NOT_COMPLETED" = 0 ] || die "$NOT_COMPLETED SLURM jobs did not complete: $(grep -v ' JobState=COMPLETED ' "$TMP/log/jobcomp.txt")"
# ... and squeue's job records (kept MinJobAge seconds): the plugin's comment names the rule.
squeue -h --states=all -o '%i|%T|%k' | sort -n > "$TMP/log/squeue.txt"
awk -F'|' '$2 == "COMPLETED" && $3 ~ /^rule_/ { sub(/^rule_/, "", $3); sub(/_wildcards_.*/, "", $3); print $3 }' \
    "$TMP/log/squeue.txt" | sort | uniq -c | awk '{ print $2, $1 }' | sort > "$TMP/log/squeue-rules.txt"
diff "$TMP/log/expected-rules.txt" "$TMP/log/squeue-rules.txt" > /dev/null ||
    die "jobs per rule: DAG $(echo $(cat "$TMP/log/expected-rules.txt")), squeue $(echo $(cat "$TMP/log/squeue-rules.txt")) (records: $(echo $(cat "$TMP/log/squeue.txt")))"
# ... and the plugin's SLURM log of each job (kept with --slurm-keep-successful-logs).
LOGS=$(find "$TMP/work/cluster/.snakemake/slurm_logs" -name '*.log' | wc -l)
[ "$LOGS" = "$EXPECTED" ] || die "$LOGS SLURM job logs for $EXPECTED jobs"
say "sbatch: $SUBMITTED jobs submitted, all COMPLETED; per rule: $(echo $(cat "$TMP/log/expected-rules.txt"))"

# ---------------------------------------------------------------------------------------------
# Same results, byte for byte.
N_FILES=$(find "$TMP/work/local/results" -type f | wc -l)
[ "$N_FILES" -gt 0 ] || die "the local run wrote no results"
if ! diff -r -q "$TMP/work/local/results" "$TMP/work/cluster/results" > "$TMP/log/results-diff.txt"; then
    die "results differ between the local and the cluster run: $(cat "$TMP/log/results-diff.txt")"
fi
say "results/: $N_FILES files, byte-identical between --cores 8 and --profile profiles/slurm"
echo "SLURM-E2E: passed; sbatch_jobs=$SUBMITTED cluster_run_s=$CLUSTER_SECONDS local_run_s=$LOCAL_SECONDS wall_s=$((SECONDS - START))"
