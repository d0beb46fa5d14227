#!/usr/bin/env bash
# A real Slurm cluster on one machine for tests: slurmctld + munged in the root namespace and
# N slurmd "nodes" (default 3), each in its own network + UTS + mount namespace with its own
# address and hostname (n1..nN), joined by a bridge that has no route anywhere else.
# Run as root; needs slurmctld slurmd slurm-client munge (Debian), iproute2 and util-linux.
# Recipe and pitfalls: ../shared/research/slurm_local.md (section 5b). Stop with slurm-down.sh.
set -euo pipefail
# CPUS: per node, the real cores by default. task/affinity binds each task to its cores (and
# prints srun --cpu-bind=verbose reports), which fails on CPUs the machine does not have.
N=${N:-3}; CPUS=${CPUS:-$(nproc)}; NET=${NET:-10.77.0}; BR=${BR:-slbr0}
if ip link show "$BR" >/dev/null 2>&1; then
    echo "slurm-up: $BR exists: a cluster is already up (run slurm-down.sh first)" >&2
    exit 1
fi
ip link add "$BR" type bridge
ip addr add "$NET.1/24" dev "$BR"
ip link set "$BR" up
for i in $(seq 1 "$N"); do
    ns=slnode$i
    ip netns add "$ns"
    ip link add "veth-n$i" type veth peer name eth0 netns "$ns"
    ip link set "veth-n$i" master "$BR" up
    ip -n "$ns" addr add "$NET.1$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    mkdir -p "/etc/netns/$ns"
    { echo "127.0.0.1 localhost"; echo "$NET.1 $(hostname -s) ctl"
      for j in $(seq 1 "$N"); do echo "$NET.1$j n$j"; done; } > "/etc/netns/$ns/hosts"
done
mkdir -p /etc/slurm
{
cat <<CONF
ClusterName=ci
SlurmctldHost=localhost($NET.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.log
ReturnToService=2
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd-%n.pid
SlurmdSpoolDir=/var/lib/slurm/slurmd/%n
SlurmdLogFile=/var/log/slurm/slurmd-%n.log
TmpFS=/tmp/slurm-%n
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MessageTimeout=10
KillWait=2
InactiveLimit=0
MinJobAge=600
CONF
for i in $(seq 1 "$N"); do
    echo "NodeName=n$i NodeAddr=$NET.1$i CPUs=$CPUS Sockets=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN"
done
echo "PartitionName=debug Nodes=n[1-$N] Default=YES MaxTime=60 State=UP"
} > /etc/slurm/slurm.conf
install -d -o munge -g munge -m 0755 /run/munge
install -d -o slurm -g slurm -m 0755 /run/slurm /var/lib/slurm/slurmctld /var/log/slurm
if [ ! -s /etc/munge/munge.key ]; then mungekey --create --force; fi
chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
# A munged already running (a system service) is used and left alone; one started here is
# recorded in /run/slurm/munged.pid so that slurm-down.sh stops it.
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    rm -f /run/munge/munged.pid  # a stale one would be copied below
    runuser -u munge -- /usr/sbin/munged --force
    for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
    cp /run/munge/munged.pid /run/slurm/munged.pid
fi
for _ in $(seq 50); do munge -n </dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
# -c: start from no saved state. A cluster torn down while a job still ran would otherwise come
# back with its nodes "allocated" to that job until slurmctld times it out. Job ids restart at 1,
# which is safe only together with fresh slurmd spools (stale pmix sockets otherwise).
/usr/sbin/slurmctld -c
for i in $(seq 1 "$N"); do
    rm -rf "/var/lib/slurm/slurmd/n$i" "/tmp/slurm-n$i"
    install -d -m 0755 "/var/lib/slurm/slurmd/n$i" "/tmp/slurm-n$i"
    # nsenter, not "ip netns exec": that remounts /sys and slurmd loses its cgroup mounts.
    nsenter --net="/run/netns/slnode$i" unshare --uts --mount --propagation private \
        sh -c "mount --bind /etc/netns/slnode$i/hosts /etc/hosts && hostname n$i && exec /usr/sbin/slurmd"
done
for _ in $(seq 150); do [ "$(sinfo -h -o %T 2>/dev/null | sort -u)" = idle ] && break; sleep 0.2; done
if [ "$(sinfo -h -o %T | sort -u)" != idle ]; then
    echo "slurm-up: nodes did not become idle:" >&2; sinfo -N >&2; exit 1
fi
sinfo -N
