#!/usr/bin/env bash
# Add one source tarball, made from a local git clone, to a Spack source mirror.
#
# The tarball is built like GitHub's archive endpoints build theirs
# (`git archive --format=tar --prefix=<prefix> <ref> | gzip -n`), so for a tag the
# sha256 equals the one a Spack recipe records for
#   https://github.com/<org>/<repo>/archive/refs/tags/<tag>.tar.gz   (prefix <repo>-<tag without v>/)
# and for a commit the one for
#   https://github.com/<org>/<repo>/archive/<full sha>.tar.gz          (prefix <repo>-<full sha>/).
#
# Mirror layout written (what `spack mirror create` makes; Spack 1.x looks sources up by checksum):
#   <mirror>/<package>/<package>-<version>.<ext>
#   <mirror>/_source-cache/archive/<sha256[0:2]>/<sha256>.<ext> -> ../../../<package>/<package>-<version>.<ext>
#
# Prints the sha256 on stdout. Idempotent: an identical existing entry is left alone; an existing
# different file (or a symlink pointing elsewhere) is an error and nothing is overwritten.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: mirror_from_git.sh --git DIR --ref TAG_OR_SHA --prefix DIRNAME/ --package NAME
                          --version VER --mirror DIR [--sha256 EXPECTED] [--ext tar.gz]

  --git DIR        local git clone (bare or not) holding REF
  --ref REF        tag, branch or commit to archive
  --prefix P       top directory inside the tarball, with trailing slash (e.g. mpi-benchmarks-IMB-v2021.7/)
  --package NAME   Spack package name (mirror subdirectory)
  --version VER    Spack version (file name <package>-<version>.<ext>)
  --mirror DIR     mirror root (created if missing)
  --sha256 SUM     optional: fail unless the archive has this sha256 (e.g. the recipe's checksum)
  --ext EXT        archive extension, only tar.gz is supported (default)
EOF
}

die() { echo "mirror_from_git.sh: error: $*" >&2; exit 1; }

git_dir="" ref="" prefix="" package="" version="" mirror="" expected="" ext="tar.gz"
while [ $# -gt 0 ]; do
    case "$1" in
        --git) git_dir="${2-}"; shift 2 ;;
        --ref) ref="${2-}"; shift 2 ;;
        --prefix) prefix="${2-}"; shift 2 ;;
        --package) package="${2-}"; shift 2 ;;
        --version) version="${2-}"; shift 2 ;;
        --mirror) mirror="${2-}"; shift 2 ;;
        --sha256) expected="${2-}"; shift 2 ;;
        --ext) ext="${2-}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

for v in git_dir ref prefix package version mirror; do
    [ -n "${!v}" ] || { usage >&2; die "missing --${v/_dir/}"; }
done
[ "$ext" = "tar.gz" ] || die "only --ext tar.gz is supported (got '$ext')"
case "$prefix" in */) ;; *) die "--prefix must end with '/' (got '$prefix')" ;; esac
case "$package$version" in */*) die "package/version must not contain '/'" ;; esac
[ -d "$git_dir" ] || die "no such git directory: $git_dir"
git -C "$git_dir" rev-parse --verify --quiet "${ref}^{commit}" >/dev/null \
    || die "ref '$ref' not found in $git_dir"

mkdir -p "$mirror/$package"
rel="$package/$package-$version.$ext"
dest="$mirror/$rel"

tmp="$(mktemp "$mirror/$package/.tmp.$package-$version.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
git -C "$git_dir" archive --format=tar --prefix="$prefix" "$ref" | gzip -n > "$tmp"
sha="$(sha256sum "$tmp" | cut -d' ' -f1)"

if [ -n "$expected" ] && [ "$sha" != "$expected" ]; then
    die "sha256 of $ref with prefix $prefix is $sha, expected $expected (check --prefix and --ref)"
fi

if [ -e "$dest" ] || [ -L "$dest" ]; then
    if [ -f "$dest" ] && cmp -s "$tmp" "$dest"; then
        echo "mirror_from_git.sh: $dest already present and identical" >&2
    else
        die "refusing to overwrite existing different file: $dest"
    fi
else
    chmod 0644 "$tmp"
    mv "$tmp" "$dest"
fi

link_dir="$mirror/_source-cache/archive/${sha:0:2}"
link="$link_dir/$sha.$ext"
target="../../../$rel"
mkdir -p "$link_dir"
if [ -L "$link" ]; then
    [ "$(readlink "$link")" = "$target" ] \
        || die "refusing to overwrite existing symlink $link -> $(readlink "$link") (wanted $target)"
elif [ -e "$link" ]; then
    cmp -s "$link" "$dest" || die "refusing to overwrite existing different file: $link"
else
    ln -s "$target" "$link"
fi

echo "$sha"
