# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
#
# commstack's copy of spack-packages' builtin `intel-mpi-benchmarks` (commit 1e8cf05), which it
# overrides when this repository is listed before builtin. Changes: versions 2021.8-2021.11, the
# `mpi4` variant, only the selected suites are built (one after another), 2021.8+ build fixes,
# the build against SimGrid's SMPI (^simgrid).
# Package API v1 layout; loads in Spack 1.x and 0.2x.

import spack

try:  # Spack >= 1.0: build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.makefile import MakefilePackage
except ImportError:  # Spack 0.x
    from spack.build_systems.makefile import MakefilePackage

from spack.package import *


class IntelMpiBenchmarks(MakefilePackage):
    """Intel MPI Benchmarks provides a set of elementary benchmarks that
    conform to MPI-1, MPI-2, and MPI-3 standard. You can run all of
    the supported benchmarks, or a subset specified in the command
    line using one executable file. Use command-line parameters to
    specify various settings, such as time measurement, message
    lengths, and selection of communicators.

    Each enabled suite installs one executable into ``bin``: IMB-MPI1,
    IMB-EXT, IMB-IO, IMB-NBC, IMB-P2P, IMB-RMA, IMB-MT and (2021.11,
    ``+mpi4``) IMB-MPI4.
    """

    homepage = "https://software.intel.com/en-us/articles/intel-mpi-benchmarks"
    url = "https://github.com/intel/mpi-benchmarks/archive/IMB-v2021.3.tar.gz"

    license("BSD-3-Clause")

    version("2021.11", sha256="728b522b3bb05580c26e374bfae2a262bf8007b3b2c7d4c9480e4363953270c7")
    version("2021.10", sha256="286a5a10009355a61ed4a499ab4cb81bade41e6930a651a92928228343ff4a82")
    version("2021.9.1", sha256="85216bbef3ec8fd0b34f9d2e8a2c51d89c22faf58bfebadb6be0422b79a31fcc")
    version("2021.9", sha256="5922e74974e05e027aa7e2579afd5e2fb83de17e7d72f4da7d461580c04363c8")
    version("2021.8", sha256="78914a8e127d776f1cf71b095dc564ade60c1cf8d497f65f3390167a11a121bf")
    version("2021.7", sha256="acee02cc719a74e6853194576cb7e6bf1fdc74f8971578e1b2141306c3c19477")
    version("2021.6", sha256="57d1bcc0027f8fc7bffe323ab70cc9d3f1d7482d456c47b4a9e7c4337089bd54")
    version("2021.5", sha256="ac144dbfad8759e4956d99569dfcbec25758ba10abfb5ae2d83831660f27be60")
    version("2021.4", sha256="786570f0ff46aab01c4e5ecbde72c8051682809b23a04e55554f265b761ddde3")
    version("2021.3", sha256="9b58a4a7eef7c0c877513152340948402fd87cb06270d2d81308dc2ef740f4c7")
    version("2021.2", sha256="ade3bfe18b4313a31fc09f0bf038e0a6c169c4145089bfc6f1f827687b81be6a")
    version("2021.1", sha256="9089bb81e3091af3481e03b898b339fb2d9fb6574d4ef059adb1f5410112b23a")
    version("2019.6", sha256="1cd0bab9e947228fced4666d907f77c51336291533919896a923cff5fcad62e9")
    version("2019.5", sha256="61f8e872a3c3076af53007a68e4da3a8d66be2ba7a051dc21e626a4e2d26e651")
    version("2019.4", sha256="aeb336be10275c1a2f579b491b6631122876b461ac7148b1d0764f13b7552690")
    version("2019.3", sha256="4f256d11bfed9ca6166548486d61a062e67be61f13dd9f30690232720e185f31")
    version("2019.2", sha256="0bc2224a913073aaa5958f6ae08341e5fcd39cedc6722a09bfd4a3d7591a340b")
    version("2019.1", sha256="fe0d065b9936b6943ea83cb3d00aede43b17565285c6b1791fee8e340853ef79")
    version("2019.0", sha256="1c7d44aa7fd86ca84ac7cae1a69a8426243048d6294582337f1de7b4ffe68d37")

    variant("mpi1", default=True, description="Build MPI1 benchmark")
    variant("ext", default=True, description="Build EXT benchmark")
    variant("io", default=True, description="Build IO benchmark")
    variant("nbc", default=True, description="Build NBC benchmark")
    variant("p2p", default=True, description="Build P2P benchmark", when="@2018:")
    variant("rma", default=True, description="Build RMA benchmark")
    variant("mt", default=True, description="Build MT benchmark")
    variant(
        "mpi4",
        default=False,
        description="Build MPI4 benchmark (needs an MPI-4 library, e.g. MPICH 4, Open MPI 5)",
        when="@2021.11:",
    )
    variant(
        "check", default=False, description="Build with MPI implementation verification checks"
    )

    # Spack >= 1.0 attaches compilers through language dependencies; Spack 0.x has no such
    # virtual packages (spack.package_api_version exists only in Spack >= 1.0).
    if hasattr(spack, "package_api_version"):
        depends_on("c", type="build")
        depends_on("cxx", type="build")

    depends_on("mpi", when="@2019:")

    # https://github.com/intel/mpi-benchmarks/pull/19
    patch("add_const.patch", when="@2019")
    # https://github.com/intel/mpi-benchmarks/pull/20
    patch("reorder_benchmark_macros.patch", when="@2019.1:2019.6")
    # SimGrid's SMPI: smpicc force-includes smpi/smpi_helpers.h, which defines malloc, calloc,
    # realloc and free as function-like macros, and src_c/IMB_declare.h then includes <malloc.h>,
    # whose prototypes those macros break. IMB needs nothing of <malloc.h> that <stdlib.h> does
    # not declare: the patch skips it when SMPI_HELPERS_H is defined. (A patch rather than build
    # flags, so that the recipe's code and the builds against other MPIs stay as they are.)
    patch("smpi-malloc-h.patch", when="@2019:^simgrid")

    conflicts(
        "^openmpi",
        when="@:2019.0",
        msg="intel-mpi-benchmarks <= v2019.0 cannot be built with OpenMPI, "
        "please specify a different MPI implementation",
    )
    # Handle missing variants in previous versions
    conflicts("+p2p", when="@:2019", msg="IMB-P2P is built by this recipe from 2021.1 on")
    conflicts("+mt", when="@:2019", msg="IMB-MT is built by this recipe from 2021.1 on")
    # IMB-MPI4 calls MPI-4.0 functions (partitioned communication, MPI_Isendrecv, ...).
    for _mpi in ("openmpi@:4", "mpich@:3", "cray-mpich@:8"):
        conflicts(
            f"^{_mpi}",
            when="+mpi4",
            msg=f"IMB-MPI4 needs an MPI-4 library; {_mpi} implements MPI 3.1 (use ~mpi4)",
        )

    #: benchmark suites in build order: variant +<suite in lower case>, executable IMB-<suite>
    suites = ("MPI1", "EXT", "IO", "NBC", "P2P", "RMA", "MT", "MPI4")

    def url_for_version(self, version):
        if version <= Version("2019.1"):
            url = "https://github.com/intel/mpi-benchmarks/archive/refs/tags/v{0}.tar.gz"
        else:
            url = "https://github.com/intel/mpi-benchmarks/archive/refs/tags/IMB-v{0}.tar.gz"
        return url.format(version)

    @property
    def selected_suites(self):
        return [s for s in self.suites if self.spec.satisfies(f"+{s.lower()}")]

    @property
    def build_directory(self):
        if self.spec.satisfies("@2018"):
            return "src"
        else:
            return "."

    # The suites share object files in src_cpp (imb.o, args_parser.o, ...), so the top-level
    # targets must not run concurrently; each one calls a plain (serial) `make` inside.
    parallel = False

    @property
    def build_targets(self):
        spec = self.spec
        if spec.satisfies("@2021:"):
            # The top-level IMB-<suite> targets build just the selected suites ("TARGET=X"
            # arguments would build the `all` target, i.e. every suite).
            targets = [f"IMB-{suite}" for suite in self.selected_suites]
        else:
            targets = list(self.selected_suites)
            if spec.satisfies("@2019:"):
                targets = ["TARGET=" + target for target in targets]

        cppflags = []
        if spec.satisfies("+check"):
            cppflags.append("-DCHECK")
        if spec.satisfies("@2021.8:"):
            # IMB does not use the MPI C++ bindings; Open MPI 4's (and MPICH's) C++ binding
            # headers trigger -Wcast-function-type warnings in IMB's -Wextra build.
            cppflags += ["-DOMPI_SKIP_MPICXX=1", "-DMPICH_SKIP_MPICXX=1"]
        if cppflags:
            targets.append("CPPFLAGS=" + " ".join(cppflags))
        return targets

    def edit(self, spec, prefix):
        env["CC"] = spec["mpi"].mpicc
        env["CXX"] = spec["mpi"].mpicxx

        if spec.satisfies("@2021.8:"):
            src = self.stage.source_path
            makefiles = [
                join_path(src, "src_cpp", "Makefile"),
                join_path(src, "src_c", "P2P", "Makefile"),
            ]
            # From 2021.8 on, every warning is an error; a newer compiler or MPI header than
            # Intel tested would fail the build for no functional reason.
            filter_file(r"\s-Werror\b", "", *makefiles)
            # src_cpp/Makefile adds the OpenMP flag for IMB-MT only when $(CXX) is literally
            # mpicxx, g++, icpx, ... (not a path such as Spack's spec["mpi"].mpicxx); without it
            # IMB-MT would silently be built without OpenMP.
            flag = self.compiler.openmp_flag
            filter_file(
                r"^ifdef WITH_OPENMP$",
                f"ifdef WITH_OPENMP\noverride CFLAGS += {flag}\noverride CXXFLAGS += {flag}",
                makefiles[0],
            )

    def install(self, spec, prefix):
        mkdir(prefix.bin)

        with working_dir(self.build_directory):
            for suite in self.selected_suites:
                install(f"IMB-{suite}", prefix.bin)
