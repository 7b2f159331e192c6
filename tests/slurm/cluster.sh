#!/usr/bin/env bash
# A one-node Slurm cluster for tests/integration/test_slurm.py: munged,
# slurmctld and slurmd as root, its configuration and state in one directory
# (WRITERPROF_SLURM, default /tmp/writerprof-slurm), clients pointed at it by
# SLURM_CONF. proctrack/cgroup where this machine's cgroups allow slurmd to
# use it (what production clusters run), else proctrack/linuxproc; `start`
# says which, and writes it into $WRITERPROF_SLURM/proctrack.
#   cluster.sh start | stop
set -euo pipefail
state=${WRITERPROF_SLURM:-/tmp/writerprof-slurm}
export SLURM_CONF=$state/slurm.conf

stop() {
    for daemon in slurmd slurmctld munged; do
        [ -f "$state/$daemon.pid" ] && kill "$(cat "$state/$daemon.pid")" 2>/dev/null || true
    done
    sleep 1
    rm -f "$state"/*.pid
}

configure() {  # $1: the proctrack plugin
    local node
    node=$(slurmd -C | head -n 1)
    mkdir -p "$state/ctld" "$state/slurmd" "$state/munge"
    cat > "$state/slurm.conf" <<CONF
ClusterName=writerprof
SlurmctldHost=$(hostname -s)
AuthType=auth/munge
AuthInfo=socket=$state/munge/munge.socket
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/$1
TaskPlugin=task/affinity
MpiDefault=pmi2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
KillWait=5
OverTimeLimit=0
MinJobAge=300
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
SlurmdSpoolDir=$state/slurmd
StateSaveLocation=$state/ctld
$node State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
    printf 'CgroupPlugin=autodetect\nCgroupMountpoint=/sys/fs/cgroup\nConstrainCores=no\n' > "$state/cgroup.conf"
}

up() {  # slurmd registered and a step runs
    for _ in $(seq 40); do
        if srun -N1 -n1 -t1 true 2>/dev/null; then return 0; fi
        sleep 0.5
    done
    return 1
}

start() {
    stop
    mkdir -p "$state/munge"
    munged --force --socket="$state/munge/munge.socket" --pid-file="$state/munged.pid" \
        --log-file="$state/munged.log" --seed-file="$state/munge/seed"
    for proctrack in cgroup linuxproc; do
        configure "$proctrack"
        slurmctld -c -i
        slurmd -c
        if up; then
            echo "$proctrack" > "$state/proctrack"
            echo "cluster.sh: a one-node Slurm $(sinfo -V | cut -d' ' -f2) on $(hostname -s), proctrack/$proctrack ($state)"
            return 0
        fi
        echo "cluster.sh: proctrack/$proctrack did not start here ($(tail -n 1 "$state/slurmd.log" 2>/dev/null))"
        for daemon in slurmd slurmctld; do
            [ -f "$state/$daemon.pid" ] && kill "$(cat "$state/$daemon.pid")" 2>/dev/null || true
        done
        sleep 1
    done
    return 1
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
