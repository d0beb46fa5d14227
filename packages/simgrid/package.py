# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
#
# commstack recipe: builtin SimGrid as an MPI provider (SMPI), plus two versions whose sources are
# in commstack's mirror: Debian's upstream tarball of 3.32 and GitHub's tag archive of v4.1.
# Package API v1 layout; loads in Spack 1.x and 0.2x.

try:  # Spack >= 1.0: the builtin recipes live in the builtin package repository
    from spack_repo.builtin.packages.simgrid.package import Simgrid as BuiltinSimgrid
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.simgrid import Simgrid as BuiltinSimgrid

from spack.package import *


class Simgrid(BuiltinSimgrid):
    """SimGrid, the builtin recipe, as an MPI provider: SMPI (``+smpi``) runs unmodified MPI
    applications inside the simulator, compiled with its wrappers (``smpicc``, ``smpicxx``,
    ``smpif90``, ``smpiff``) and started with ``smpirun -platform P.xml -hostfile H.txt``.

    With ``+smpi`` the package provides ``mpi@:3.1`` (SMPI's ``MPI_VERSION`` 3,
    ``MPI_SUBVERSION`` 1), so ``intel-mpi-benchmarks ^simgrid`` builds a benchmark against SMPI.
    SMPI implements most of MPI 3.1, but not ``MPI_Neighbor_*``, ``MPI_Dist_graph_create*``,
    ``MPI_Intercomm_create`` and ``MPI_Intercomm_merge``, ``MPI_Comm_spawn`` or ``MPI_Mprobe``
    (they abort with "Not yet implemented"), and threads only up to ``MPI_THREAD_FUNNELED``.

    Version ``3.32-debian`` is the 3.32 release as Debian ships it: ``simgrid_3.32.orig.tar.xz``
    of Debian's ``simgrid 3.32-2`` (bookworm) source package, whose sha256 its ``.dsc`` lists. It
    is ``git archive --prefix=simgrid-3.32/ v3.32`` of github.com/simgrid/simgrid (commit
    e8d2ff8d; the uncompressed tar is byte-identical) compressed with ``xz -6``, so the files are
    the tag's, but the bytes differ from the release ``simgrid-3.32.tar.gz`` whose checksum the
    builtin ``3.32`` records. commstack's source mirror carries it
    (``packages/mirror-sources.tsv``). The version sorts just above 3.32, so ``@3.32:`` and
    ``@:3.32`` conditions hold for it.

    Version ``4.1-tag`` is the 4.1 release as GitHub's archive of the tag ``v4.1`` (commit
    535b880f, 2025-11-11): ``git archive --format=tar --prefix=simgrid-4.1/ v4.1 | gzip -n``,
    the tag's files. The builtin ``4.1`` records the checksum of the release asset
    ``simgrid-4.1.tar.gz``, a ``make dist`` tarball (the files of ``MANIFEST.in``), so these
    bytes cannot be that version: a distinct name says which tarball was built. It sorts just
    above 4.1 (and below 4.1.1), so ``@4.1:`` and ``@:4.1`` conditions hold for it. 4.1 keeps
    the detached sends' activities in a ``std::set`` (a ``std::list`` up to 3.32, whose
    ``remove`` made a large Alltoall quadratic in its messages).
    """

    version(
        "4.1-tag",
        sha256="65e762764cd419a762151f1a480d0f62220c28c645ea3b114c94dd1ce23c6c33",
        url="https://github.com/simgrid/simgrid/archive/refs/tags/v4.1.tar.gz",
    )
    version(
        "3.32-debian",
        sha256="4b413d8e9d9b29b8e086b2f3edaec5b1149d7eb52b2e134f1ed13d30891ece7b",
        url="https://deb.debian.org/debian/pool/main/s/simgrid/simgrid_3.32.orig.tar.xz",
    )

    provides("mpi@:3.1", when="+smpi")

    # CMakeLists.txt of 3.32 to 4.1 stops below g++ 7 (CMAKE_CXX_STANDARD 17 from 3.32 on).
    conflicts("%gcc@:6", when="@3.32:", msg="SimGrid 3.32 and later need C++17: GCC 7 or newer")

    # CMakeLists.txt stops without a Python 3 interpreter (tesh, code generators), and up to
    # 4.0 without Perl (4.1 uses it only in maintainer mode, to regenerate the XML parser).
    depends_on("perl", type="build", when="@:4.0")
    depends_on("python@3:", type="build")
    # 4.1's cmake_minimum_required is 3.12 (3.5 in 3.32).
    depends_on("cmake@3.12:", type="build", when="@3.34:")

    # The wrappers run the compiler CMake found (CC=@CMAKE_C_COMPILER@): Spack's compiler
    # wrapper during the build, the real compiler once installed.
    filter_compiler_wrappers("smpicc", "smpicxx", "smpif90", "smpiff", relative_root="bin")

    def _wrappers(self):
        bin = self.prefix.bin
        return {
            "MPICC": join_path(bin, "smpicc"),
            "MPICXX": join_path(bin, "smpicxx"),
            "MPIF77": join_path(bin, "smpiff"),
            "MPIF90": join_path(bin, "smpif90"),
            "MPIFC": join_path(bin, "smpif90"),
        }

    def setup_dependent_package(self, module, dependent_spec):
        super().setup_dependent_package(module, dependent_spec)  # spec.smpicc etc.
        if self.spec.satisfies("+smpi"):
            wrappers = self._wrappers()
            self.spec.mpicc = wrappers["MPICC"]
            self.spec.mpicxx = wrappers["MPICXX"]
            self.spec.mpifc = wrappers["MPIFC"]
            self.spec.mpif77 = wrappers["MPIF77"]

    def setup_run_environment(self, env: EnvironmentModifications) -> None:
        # Like builtin MPI providers: an MPI is a compiler too, so its run environment (which
        # dependents' builds get) names the wrappers.
        if self.spec.satisfies("+smpi"):
            for var, path in self._wrappers().items():
                env.set(var, path)

    def setup_dependent_build_environment(
        self, env: EnvironmentModifications, dependent_spec: Spec
    ) -> None:
        self.setup_run_environment(env)

    def cmake_args(self):
        args = super().cmake_args()
        args += [
            self.define_from_variant("enable_smpi", "smpi"),
            # Optional BMF model: never picked up from whatever Eigen3 the build machine has.
            self.define("CMAKE_DISABLE_FIND_PACKAGE_Eigen3", True),
            # Likewise the optional JSON support (DAG and platform loaders; from 3.34 on).
            self.define("CMAKE_DISABLE_FIND_PACKAGE_nlohmann_json", True),
            # The builtin only turns the model checker on; from 3.35 on it is on by default.
            self.define_from_variant("enable_model-checking", "mc"),
        ]
        return args


# The builtin recipe depends on boost+exception, which no external Boost without the compiled
# Boost.Exception library satisfies (Debian's libboost-dev is headers only). SimGrid includes
# Boost's header-only libraries (algorithm, intrusive, heap, optional, ...) and finds context and
# stacktrace as optional components, but never uses Boost.Exception: no file of the tags v3_21 to
# v4.1 names boost/exception or an exception component. So any Boost will do.
for _when, _deps in Simgrid.dependencies.items():
    if _when == Spec() and "boost" in _deps:
        _deps["boost"].spec = Spec("boost")
