#!/usr/bin/env bash
# Flux (flux-core) in one command, offline: the Debian packages of group flux (and spack: the
# compiler and autotools) of scripts/system-packages.txt, the flux-core source of
# packages/mirror-sources.tsv rebuilt from a clone and checked against its sha256, then
# autogen.sh, configure, make and make install into the prefix.
#   scripts/setup_flux.sh [--sources-dir DIR] [--prefix DIR] [-j N] [--where]
# --sources-dir: the source clones of packages/mirror-sources.tsv (default ~/.cache/commstack/src;
#   a missing flux-core clone is cloned from its git_url). --prefix: where flux-core goes
#   (default $COMMSTACK_FLUX_PREFIX, else ~/.cache/commstack/flux-core-<version>; flux is then
#   <prefix>/bin/flux, what tests/test_flux_local.py looks for). --where: print the prefix, exit.
# Idempotent: a run with <prefix>/bin/flux reporting the version says "nothing to do".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=$HOME/.cache/commstack
sources=$cache/src
jobs=2
prefix=
where_only=
while [ $# -gt 0 ]; do
    case "$1" in
        --sources-dir) sources=$2; shift 2 ;;
        --prefix) prefix=$2; shift 2 ;;
        -j) jobs=$2; shift 2 ;;
        --where) where_only=1; shift ;;
        -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup_flux: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
die() { echo "setup_flux: error: $*" >&2; exit 1; }

# The flux-core row of packages/mirror-sources.tsv: version, git_url, ref, tar_prefix, sha256.
manifest=$root/packages/mirror-sources.tsv
IFS=$'\t' read -r version url ref tar_prefix sha256 < <(awk -F'\t' '$1 == "flux-core" {OFS = "\t"; print $2, $3, $4, $5, $6; exit}' "$manifest")
[ -n "${sha256:-}" ] || die "no flux-core row in $manifest"
release=${version%-tag}   # 0.81.0-tag -> 0.81.0, what `flux version` reports
prefix=${prefix:-${COMMSTACK_FLUX_PREFIX:-$cache/flux-core-$release}}
if [ -n "$where_only" ]; then echo "prefix: $prefix"; exit 0; fi

t_all=$SECONDS
if "$prefix/bin/flux" version 2>/dev/null | grep -q "^commands:[[:space:]]*$release$"; then
    echo "setup_flux: nothing to do: $prefix/bin/flux is flux-core $release ($((SECONDS - t_all)) s)"
    exit 0
fi

# 1. Debian packages: group flux (flux-core's libraries, Lua, Python modules) and spack (gcc,
#    make, autotools, pkgconf, hwloc headers).
missing=$(bash "$root/scripts/system_packages.sh" --check spack flux)
if [ -n "$missing" ]; then
    bash "$root/scripts/system_packages.sh" spack flux
    still=$(bash "$root/scripts/system_packages.sh" --check spack flux)
    [ -z "$still" ] || die "Debian packages missing: $still (as root: apt-get install $still)"
    echo "setup_flux: packages: installed $missing ($((SECONDS - t_all)) s)"
fi

# 2. The source: the row's archive rebuilt from the clone (git archive | gzip -n), sha256 checked.
clone=$sources/flux-core
if [ ! -d "$clone" ]; then
    mkdir -p "$sources"
    git clone -q --bare "$url" "$clone" || die "cannot clone $url (offline: --sources-dir DIR with a flux-core clone)"
fi
build=$cache/flux-build
rm -rf "$build"; mkdir -p "$build"
# ref is "<tag> [pathspec ...]" (see the row's comment): word splitting is intended
# shellcheck disable=SC2086
git -C "$clone" archive --format=tar --prefix="$tar_prefix" $ref 2>"$build/archive.err" \
    | gzip -n > "$build/src.tar.gz"
got=$(sha256sum "$build/src.tar.gz" | cut -d' ' -f1)
[ "$got" = "$sha256" ] || die "flux-core $version: sha256 $got, expected $sha256 (git archive: $(cat "$build/archive.err"))"
tar -C "$build" -xzf "$build/src.tar.gz"
src=$build/${tar_prefix%/}
echo "setup_flux: source: $version from $clone, sha256 verified ($((SECONDS - t_all)) s)"

# 3. Build and install (a git archive has no configure: autogen.sh; FLUX_VERSION for AC_INIT,
#    which otherwise asks git describe).
log=$build/build.log
echo "setup_flux: building flux-core $release into $prefix (log $log)"
# PYTHON: Debian's python3, whose modules group flux installs (not a python3 earlier on PATH).
(
    cd "$src" &&
    FLUX_VERSION=$release ./autogen.sh &&
    FLUX_VERSION=$release ./configure --prefix="$prefix" --disable-docs PYTHON=/usr/bin/python3 &&
    nice -n 19 make -j "$jobs" &&
    make install
) >"$log" 2>&1 || { tail -30 "$log" >&2; die "build failed (log $log)"; }
"$prefix/bin/flux" version | grep -q "^commands:[[:space:]]*$release$" || die "$prefix/bin/flux does not report $release"
rm -rf "$src" "$build/src.tar.gz"
echo "setup_flux: done: $prefix/bin/flux is flux-core $release ($((SECONDS - t_all)) s)"
