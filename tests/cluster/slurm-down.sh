#!/usr/bin/env bash
# Stop the test cluster started by slurm-up.sh (slurmd nodes, slurmctld, and munged if slurm-up.sh
# started it) and remove its namespaces and bridge. Waits until every stopped daemon has exited.
N=${N:-3}; BR=${BR:-slbr0}
stopped=()
stop() {  # kill a daemon by PID file, only if that PID is still the daemon
    local f=$1 name=$2 p
    [ -s "$f" ] || return 0
    p=$(cat "$f")
    if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$name" ] && kill "$p"; then
        echo "stopped $name ($p)"; stopped+=("$p")
    fi
}
wait_stopped() {  # up to 10 s for the stopped daemons to exit, then SIGKILL (a job step whose
    # slurmctld is gone ignores SIGTERM) and up to 5 s more
    local p left tries
    for tries in 100 50; do
        for _ in $(seq "$tries"); do
            left=(); for p in "${stopped[@]}"; do [ -e "/proc/$p" ] && left+=("$p"); done
            [ ${#left[@]} -eq 0 ] && return 0
            sleep 0.1
        done
        [ "$tries" = 100 ] && kill -KILL "${left[@]}" 2>/dev/null
    done
    echo "slurm-down: still running: ${left[*]}" >&2
}
node_daemons() {  # slurmd and slurmstepd (or the PIDs given) of the nodes n1..nN, found by
    # hostname in their own UTS namespace: also those whose pid file was lost (two set-ups racing
    # overwrite it)
    local p h own pids=${1:-$(pgrep -x slurmd; pgrep -x slurmstepd)}
    own=$(readlink /proc/self/ns/uts)
    for p in $pids; do
        [ "$(readlink "/proc/$p/ns/uts" 2>/dev/null)" != "$own" ] || continue
        h=$(nsenter -t "$p" -u hostname 2>/dev/null) || continue
        if [[ $h =~ ^n([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] && [ "${BASH_REMATCH[1]}" -le "$N" ]; then
            echo "$p"
        fi
    done
}
# Cancel the jobs and give their steps up to 10 s to end while slurmctld still hears them.
ctl=$(cat /run/slurm/slurmctld.pid 2>/dev/null)
if [ "$(cat "/proc/${ctl:-0}/comm" 2>/dev/null)" = slurmctld ] && scancel --user=root >/dev/null 2>&1; then
    for _ in $(seq 100); do [ -z "$(squeue -h -u root 2>/dev/null)" ] && break; sleep 0.1; done
fi
for i in $(seq 1 "$N"); do stop "/run/slurm/slurmd-n$i.pid" slurmd; done
for p in $(node_daemons); do
    if [[ " ${stopped[*]} " != *" $p "* ]] && kill "$p" 2>/dev/null; then
        echo "stopped $(cat "/proc/$p/comm" 2>/dev/null || echo slurmd) ($p, no pid file)"; stopped+=("$p")
    fi
done
stop /run/slurm/slurmctld.pid slurmctld
wait_stopped
# Job processes that outlived their slurmstepd (slurmctld gone before scancel could reach them)
# keep a node's namespace, and its veth name, alive; the next slurm-up would fail on them.
stopped=()
for p in $(node_daemons "$(ls /proc | grep -E '^[0-9]+$')"); do
    kill "$p" 2>/dev/null && { echo "stopped $(cat "/proc/$p/comm" 2>/dev/null) ($p, left on a node)"; stopped+=("$p"); }
done
wait_stopped
# munged last: slurmctld and slurmd use it until they exit.
stopped=()
stop /run/slurm/munged.pid munged
wait_stopped
rm -f /run/slurm/munged.pid
for i in $(seq 1 "$N"); do
    ip netns del "slnode$i" 2>/dev/null
    rm -rf "/etc/netns/slnode$i" "/tmp/slurm-n$i" "/var/lib/slurm/slurmd/n$i"
done
ip link del "$BR" 2>/dev/null
rmdir /etc/netns 2>/dev/null
true
