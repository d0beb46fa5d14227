#!/usr/bin/env bash
# Install the Debian packages of scripts/system-packages.txt (all groups, or the ones named).
#   scripts/system_packages.sh [--check|--list] [GROUP ...]
# --check only lists what is missing, --list the packages of the groups. Without root or apt-get
# nothing is installed: the missing packages are named on one line and the script exits 0, so
# tests needing them skip with a reason.
# COMMSTACK_NO_APT=1 turns installing off.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check=0 list=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
if [ "${1:-}" = "--list" ]; then list=1; shift; fi
groups=("$@")

wanted=()
while read -r package group _; do
    case "$package" in ''|'#'*) continue ;; esac
    if [ ${#groups[@]} -eq 0 ] || [[ " ${groups[*]} " == *" $group "* ]]; then
        wanted+=("$package")
    fi
done < "$root/scripts/system-packages.txt"
if [ "$list" -eq 1 ]; then
    echo "${wanted[*]}"
    exit 0
fi

missing=()
for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$check" -eq 1 ]; then
    echo "${missing[*]}"
    exit 0
fi
why=""
if [ "${COMMSTACK_NO_APT:-0}" = "1" ]; then
    why="COMMSTACK_NO_APT=1"
elif ! command -v apt-get >/dev/null 2>&1; then
    why="no apt-get on this machine"
elif [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
    why="not root and no password-less sudo"
fi
if [ -n "$why" ]; then
    echo "system packages: not installing ${missing[*]} ($why); tests that need them are skipped" >&2
    exit 0
fi
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
echo "system packages: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
