#!/usr/bin/env bash
# The Spack side in one command: the Debian packages site-configs/local declares, the venv's
# clingo, Spack and spack-packages at the pinned commits, the source mirror, environments/local.
#   scripts/setup_spack.sh [--spack-clone DIR] [--packages-clone DIR] [--sources-dir DIR] [-j N]
# --spack-clone, --packages-clone: clones to clone Spack/spack-packages from (offline; default
#   GitHub). --sources-dir: the source clones of packages/mirror-sources.tsv (default
#   ~/.cache/commstack/src; missing ones are fetched from their git_url). --where: print
#   the Spack, its root and the spack-packages clone this run would use, and exit.
# Spack: $COMMSTACK_SPACK, else spack on PATH, else ~/.cache/commstack/spack (cloned if absent),
# as src/commstack/spack.py finds it, symbolic links resolved (a /usr/local/bin/spack pointing
# into a clone has the clone as its root); spack-packages beside it (<spack clone>/../spack-packages),
# registered in Spack's site scope. Mirror: $COMMSTACK_SPACK_MIRROR, else
# ~/.cache/commstack/mirror, the one site-configs/local/include.yaml names. Idempotent: a run
# with everything in place says "nothing to do".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=$HOME/.cache/commstack
SPACK_REF=9cf66332df3dd988248617fc93400045be59ebab     # docs/howto/set-up-spack.md, CI's SPACK_REF
PACKAGES_REF=1e8cf059e35d55c4fe1142fed41785bedf6c7246  # and SPACK_PACKAGES_REF
spack_from=https://github.com/spack/spack
packages_from=https://github.com/spack/spack-packages
sources=$cache/src
jobs=2
where_only=
while [ $# -gt 0 ]; do
    case "$1" in
        --spack-clone) spack_from=$2; shift 2 ;;
        --packages-clone) packages_from=$2; shift 2 ;;
        --sources-dir) sources=$2; shift 2 ;;
        -j) jobs=$2; shift 2 ;;
        --where) where_only=1; shift ;;
        -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup_spack: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done

die() { echo "setup_spack: error: $*" >&2; exit 1; }

# Where Spack is: its root is the clone the executable lives in, wherever a link to it sits.
if [ -n "${COMMSTACK_SPACK:-}" ]; then spack=$COMMSTACK_SPACK
elif type -P spack >/dev/null; then spack=$(type -P spack)
else spack=$cache/spack/bin/spack; fi
[ -L "$spack" ] && spack=$(readlink -f "$spack")
spack_root=$(dirname "$(dirname "$spack")")
packages=$(dirname "$spack_root")/spack-packages
if [ -n "$where_only" ]; then
    printf 'spack: %s\nspack root: %s\nspack-packages: %s\n' "$spack" "$spack_root" "$packages"
    exit 0
fi
changed=()
t_all=$SECONDS
t0=$SECONDS
done_stage() {  # STAGE WHAT [changed]: one line per stage with its time
    echo "setup_spack: $1: $2 ($((SECONDS - t0)) s)"
    [ "${3:-}" = changed ] && changed+=("$1")
    t0=$SECONDS
}
clone_at() {  # FROM DEST COMMIT
    local filter=()
    [ -d "$1" ] || filter=(--filter=blob:none)
    git clone -q --no-checkout "${filter[@]}" "$1" "$2" || die "cannot clone $1 into $2"
    git -C "$2" checkout -q "$3" || die "commit $3 not in $1"
}

# 1. Debian packages: groups test (the MPIs) and spack of scripts/system-packages.txt.
missing=$(bash "$root/scripts/system_packages.sh" --check test spack)
if [ -n "$missing" ]; then
    bash "$root/scripts/system_packages.sh" test spack
    still=$(bash "$root/scripts/system_packages.sh" --check test spack)
    [ -z "$still" ] || die "Debian packages missing: $still (as root: apt-get install $still)"
    done_stage packages "installed $missing" changed
else
    done_stage packages "all present"
fi

# 2. The venv: commstack (for `commstack mirror`) and clingo, the Python Spack runs on.
VENV=${COMMSTACK_VENV:-$root/.venv}
if "$VENV/bin/python" -c 'import clingo, commstack' 2>/dev/null; then
    done_stage venv "$VENV has commstack and clingo"
else
    source "$root/scripts/setup_venv.sh" report
    done_stage venv "created $VENV" changed
fi

# 3. Spack and the builtin package repository (spack-packages), registered in Spack's site scope.
export SPACK_DISABLE_LOCAL_CONFIG=1 SPACK_PYTHON=${SPACK_PYTHON:-$VENV/bin/python}
export SPACK_USER_CONFIG_PATH=${SPACK_USER_CONFIG_PATH:-$cache/spack-user-config}
export SPACK_USER_CACHE_PATH=${SPACK_USER_CACHE_PATH:-$cache/spack-user-cache}
what="$spack"
if [ ! -x "$spack" ]; then
    clone_at "$spack_from" "$spack_root" "$SPACK_REF"
    what="cloned $spack_from at ${SPACK_REF:0:9} into $spack_root"
fi
if ! "$spack" config --scope site get repos | grep -q "destination: $packages$"; then
    [ -d "$packages" ] || clone_at "$packages_from" "$packages" "$PACKAGES_REF"
    "$spack" repo set --scope site --destination "$packages" builtin >/dev/null
    what="$what; builtin = $packages"
fi
if [ "$what" = "$spack" ]; then done_stage spack "$spack, builtin = $packages"
else done_stage spack "$what" changed; fi

# 4. The source mirror: every row of packages/mirror-sources.tsv, built from the source clones.
mirror=${COMMSTACK_SPACK_MIRROR:-$cache/mirror}
manifest=$root/packages/mirror-sources.tsv
# rows missing from the mirror (or with another checksum): "package clone tar_prefix url ref"
absent=$("$VENV/bin/python" - "$manifest" "$mirror" <<'EOF'
import hashlib, sys
from pathlib import Path
from commstack.mirror import read_sources
for s in read_sources(Path(sys.argv[1])):
    f = Path(sys.argv[2], "_source-cache", "archive", s.sha256[:2], f"{s.sha256}.{s.ext}")
    if not (f.is_file() and hashlib.sha256(f.read_bytes()).hexdigest() == s.sha256):
        print(s.package, s.clone_name, s.tar_prefix, s.git_url, s.ref)
EOF
)
if [ -z "$absent" ]; then
    done_stage mirror "$mirror holds every source of $(basename "$manifest")"
else
    while read -r _ clone prefix url ref; do
        dest=$sources/$clone
        [ -e "$dest" ] && continue
        if [ "$prefix" = file ]; then  # a Debian source package's file, listed by its .dsc
            mkdir -p "$dest"
            for f in "$(basename "$url")" "$ref"; do
                curl -fsSL -o "$dest/$f" "$(dirname "$url")/$f" || die "cannot download $f from $(dirname "$url")"
            done
        else
            git clone -q --bare "$url" "$dest" || die "cannot clone $url (offline: --sources-dir DIR with the clones)"
        fi
    done <<< "$absent"
    mapfile -t pkgs < <(cut -d' ' -f1 <<< "$absent" | sort -u)
    out=$("$VENV/bin/commstack" mirror --sources "$manifest" --clones "$sources" --out "$mirror" \
        "${pkgs[@]/#/--package=}") || die "commstack mirror failed (above)"
    grep -v '^present' <<< "$out" || true
    done_stage mirror "added ${pkgs[*]} to $mirror" changed
fi

# 5. environments/local: installed when every spec of its lock is, and every view exists.
envdir=$root/environments/local
specs=$("$spack" -e "$envdir" find -c -I --format '{name}')
uninstalled=$(grep -v '^\[[+e]\]' <<< "$specs" || true)
[ -n "$specs" ] || uninstalled="not concretized"
views=$(sed -n 's/^ *root: \(views\/.*\)/\1/p' "$envdir/spack.yaml")
for v in $views; do [ -d "$envdir/$v" ] || uninstalled="$uninstalled $v"; done
if [ -z "${uninstalled// /}" ]; then
    done_stage install "environments/local installed, views $(echo $views | sed 's/views\///g')"
else
    nice -n 19 "$spack" -e "$envdir" install -j "$jobs"
    done_stage install "installed environments/local" changed
fi

if [ ${#changed[@]} -eq 0 ]; then
    echo "setup_spack: nothing to do: packages, Spack, mirror and environments/local all in place ($((SECONDS - t_all)) s)"
else
    echo "setup_spack: done (${changed[*]}) in $((SECONDS - t_all)) s"
fi
