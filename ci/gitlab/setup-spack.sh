# Source this file (bash) in a CI job: it provides the pinned Spack and builtin package repository
# this project's lockfiles were made with, and puts `spack` in the shell.
#   SPACK_REF, SPACK_PACKAGES_REF  commits (defaults: the ones of scripts/setup_spack.sh, docs/howto/set-up-spack.md)
#   COMMSTACK_CI_SPACK_DIR         where the clones live; default .ci-spack in the checkout. On a
#                                  shell runner set it to a persistent directory to clone once.
# The parent pipeline (ci/gitlab/.gitlab-ci.yml) and every job `spack ci generate` writes
# (ci/gitlab/spack/common/ci.yaml) source it.
: "${SPACK_REF:=9cf66332df3dd988248617fc93400045be59ebab}"
: "${SPACK_PACKAGES_REF:=1e8cf059e35d55c4fe1142fed41785bedf6c7246}"
_commstack_ci_dir=${COMMSTACK_CI_SPACK_DIR:-${CI_PROJECT_DIR:-$PWD}/.ci-spack}
_commstack_clone() {  # url dir ref
    if [ ! -d "$2/.git" ]; then
        git clone -q --filter=blob:none "$1" "$2"
    fi
    if ! git -C "$2" checkout -q "$3" 2>/dev/null; then
        git -C "$2" fetch -q origin && git -C "$2" checkout -q "$3"
    fi
}
_commstack_clone https://github.com/spack/spack "$_commstack_ci_dir/spack" "$SPACK_REF"
_commstack_clone https://github.com/spack/spack-packages "$_commstack_ci_dir/spack-packages" \
    "$SPACK_PACKAGES_REF"
# Private user scope: a runner account's ~/.spack must not change what CI builds.
export SPACK_DISABLE_LOCAL_CONFIG=1
export SPACK_USER_CONFIG_PATH="$_commstack_ci_dir/user-config"
export SPACK_USER_CACHE_PATH="$_commstack_ci_dir/user-cache"
. "$_commstack_ci_dir/spack/share/spack/setup-env.sh"
spack repo set --scope site --destination "$_commstack_ci_dir/spack-packages" builtin >/dev/null
unset -f _commstack_clone
