# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
#
# commstack recipe (not in spack-packages). Package API v1 layout; loads in Spack 1.x and 0.2x.

import spack

try:  # Spack >= 1.0: build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
except ImportError:  # Spack 0.x
    from spack.build_systems.cmake import CMakePackage

from spack.package import *

# version: (reprompi commit, mpi-time-sync commit). Upstream has no release tags, and its
# CMakeLists fetches MPITS (hunsa/mpi-time-sync) at branch main over git@github.com: here MPITS is
# a resource pinned to the last commit before the ReproMPI commit.
_COMMITS = {
    "2025-04-18": (
        "2e73f3d6bb0035ff76f92aa5f366f7ec49d05030",
        "49428b6ffb38b2a7bd064474cdb3e9839ab5dcdd",  # 2025-01-21
    )
}
_VENDOR = "vendor"  # the MPITS resource is unpacked to <source>/vendor/mpits


class Reprompi(CMakePackage):
    """ReproMPI: reproducible benchmarking of MPI collectives (``mpibenchmark``).

    Times MPI collectives (and mock-up compositions of them) call by call. Processes start
    each measured call after a process synchronisation chosen at run time
    (``--proc-sync=MPI_Barrier|Double_MPI_Barrier|dissem_barrier|window|roundtime``); window
    and round-time synchronisation start every call at the same instant of a global clock
    obtained by clock synchronisation (from MPITS: HCA, HCA2, HCA3, HCA3O, JK, SKaMPI
    and the hierarchical two-level Topo2; the clock synchronisation is chosen with
    ``MPITS_PARAMS="--clock-sync=..."``). ``-v`` prints every process's start and end of every
    call. MPITS (github.com/hunsa/mpi-time-sync), which upstream's CMakeLists fetches from its
    main branch at configure time, is a pinned resource here, so the build is offline.
    """

    homepage = "https://github.com/hunsa/reprompi"
    git = "https://github.com/hunsa/reprompi.git"

    license("GPL-2.0-or-later")

    # No release tags upstream: versions are commits of the master branch, named by date.
    version(
        "2025-04-18",
        sha256="6d13fe891492a26ac9a37fb8a6082164918f1979f7bc14c41d37983d2ba07e07",
        url="https://github.com/hunsa/reprompi/archive/2e73f3d6bb0035ff76f92aa5f366f7ec49d05030.tar.gz",
    )

    resource(
        name="mpits",
        url="https://github.com/hunsa/mpi-time-sync/archive/49428b6ffb38b2a7bd064474cdb3e9839ab5dcdd.tar.gz",
        sha256="7e2a0ba0fe9fb9946e8d006e4169186f28db6331399fd01bcaa9f5e4055ba73d",
        destination=_VENDOR,
        placement="mpits",
        when="@2025-04-18",
    )

    variant(
        "timer",
        default="wtime",
        values=("wtime", "gettime_realtime", "gettime_monotonic"),
        multi=False,
        description="Clock of every time stamp: MPI_Wtime or clock_gettime (ENABLE_GETTIME_*)",
    )

    # Spack >= 1.0 attaches compilers through language dependencies; Spack 0.x has no such
    # virtual packages (spack.package_api_version exists only in Spack >= 1.0).
    if hasattr(spack, "package_api_version"):
        depends_on("c", type="build")
        depends_on("cxx", type="build")

    depends_on("cmake@3.24:", type="build")  # MPITS's cmake_minimum_required
    depends_on("mpi")
    depends_on("gsl")

    # SimGrid's SMPI (^simgrid) needs three changes, all only for builds against it:
    # * smpirun starts a program by dlopen()ing it, so the program must be linked by smpicc and
    #   smpicxx themselves (they add -shared and force-include smpi/smpi_helpers.h); the plain
    #   compiler with FindMPI's flags makes a PIE executable that smpirun cannot load ("dlopen
    #   failed: cannot dynamically load position-independent executable"). CMake's checks here
    #   only compile and link (no try_run), so CMake runs with the SMPI wrappers as CC and CXX.
    # * SMPI's getopt_long wrapper restores its own saved optind at every call, which undoes
    #   ReproMPI's and MPITS's `optind = 1;` before each re-parse of argv ("List of message sizes
    #   is empty"); smpi_getopt.h (added by the patch, force-included after SMPI's header) puts
    #   the C library's getopt back. See the header for why that is safe.
    # * SMPI privatizes the program's global variables per simulated process, not those of the
    #   shared libraries it loads; MPITS keeps its state in globals, so the patch builds it as
    #   a static library linked into mpibenchmark (else ranks 1.. exit at start with status 1).
    # The patch and a @when method leave the builds against other MPIs (and their package hash)
    # as they were.
    patch("smpi.patch", when="^simgrid")

    sanity_check_is_file = (join_path("bin", "mpibenchmark"),)

    def patch(self):
        # The build records the commit it was built from (printed as "#@reprompi_commit="):
        # CMake asks git in the build directory, which is not the source's repository.
        commit = _COMMITS[str(self.spec.version)][0]
        filter_file(r"^find_package\(Git\)$", "set(GIT_FOUND FALSE)", "CMakeLists.txt")
        filter_file(
            r'set\(GIT_COMMIT_ID "unknown_git_not_found"\)',
            f'set(GIT_COMMIT_ID "{commit}")',
            "CMakeLists.txt",
        )

    @when("^simgrid")
    def setup_build_environment(self, env: EnvironmentModifications) -> None:
        bin = self.spec["mpi"].prefix.bin
        env.set("CC", join_path(bin, "smpicc"))
        env.set("CXX", join_path(bin, "smpicxx"))
        force_include = f"-include {join_path(self.stage.source_path, 'smpi_getopt.h')}"
        env.append_flags("CFLAGS", force_include)
        env.append_flags("CXXFLAGS", force_include)

    def cmake_args(self):
        spec = self.spec
        timer = spec.variants["timer"].value
        args = [
            self.define("ENABLE_GETTIME_REALTIME", timer == "gettime_realtime"),
            self.define("ENABLE_GETTIME_MONOTONIC", timer == "gettime_monotonic"),
            self.define("MPI_CXX_SKIP_MPICXX", True),
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
            self.define("MPI_CXX_COMPILER", spec["mpi"].mpicxx),
            # MPITS is a resource: FetchContent never goes online.
            self.define(
                "FETCHCONTENT_SOURCE_DIR_MPITS",
                join_path(self.stage.source_path, _VENDOR, "mpits"),
            ),
            self.define("FETCHCONTENT_FULLY_DISCONNECTED", True),
            # hwloc only adds MPITS's Topo1 clock synchronisation, and its FindHwloc misses
            # multiarch library directories: built without it, deterministically.
            self.define("CMAKE_DISABLE_FIND_PACKAGE_Hwloc", True),
        ]
        return args
