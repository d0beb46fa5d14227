#!/usr/bin/env bash
# Stop the test cluster started by slurm-up.sh and remove its namespaces and bridge.
N=${N:-3}; BR=${BR:-slbr0}
stop() {  # kill a daemon by PID file, only if that PID is still the daemon
    local f=$1 name=$2 p
    [ -s "$f" ] || return 0
    p=$(cat "$f")
    if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$name" ]; then kill "$p" && echo "stopped $name ($p)"; fi
}
scancel --user=root >/dev/null 2>&1 || true
for i in $(seq 1 "$N"); do stop "/run/slurm/slurmd-n$i.pid" slurmd; done
stop /run/slurm/slurmctld.pid slurmctld
sleep 1
for i in $(seq 1 "$N"); do
    ip netns del "slnode$i" 2>/dev/null
    rm -rf "/etc/netns/slnode$i" "/tmp/slurm-n$i" "/var/lib/slurm/slurmd/n$i"
done
ip link del "$BR" 2>/dev/null
rmdir /etc/netns 2>/dev/null
true
