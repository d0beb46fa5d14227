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

# The GHEX stack cartex's ghex_comm runtime compiles against. No GHEX release has the two-argument
# bulk_communication_object constructor cartex uses, so it is boeschf's fork (branch
# benchmarking_to_master) with the oomph, hwmalloc and GridTools of mid 2022. These are vendored as
# resources and built inside cartex's build tree (FetchContent); their libraries land in
# <prefix>/lib/ghexbench only. Spack's own ghex/oomph/hwmalloc/gridtools packages (newer,
# API-incompatible) are not used and are not shadowed.
_GHEX_FORK = "ecd6f519cc0388d353df24ee2229d3538387c4db"  # 2022-03-30
_RESOURCES = {
    # name: (url, sha256, runtimes that need it)
    "ghex": (
        f"https://github.com/boeschf/GHEX/archive/{_GHEX_FORK}.tar.gz",
        "5c49e94513159cc31b345b1b6ff43aed6ab29125f78183d63796d6ca2c8a11c3",
        ("ghex_comm",),
    ),
    "gridtools": (
        "https://github.com/GridTools/gridtools/archive/refs/tags/v2.0.0.tar.gz",
        "f94cc055d1918b7e0d8e3e25f34ffeea2ce46375c85db795ab1b7571d36eb20e",
        ("ghex_comm",),
    ),
    "oomph": (
        "https://github.com/ghex-org/oomph/archive/refs/tags/v0.1.0.tar.gz",
        "0ff36db0a5f30ae1bb02f6db6d411ea72eadd89688c00f76b4e722bd5a9ba90b",
        ("ghex_comm", "oomph_comm"),
    ),
    "hwmalloc": (
        "https://github.com/ghex-org/hwmalloc/archive/refs/tags/v0.2.0.tar.gz",
        "734758a390a3258b86307e4aef50a7ca2e5d0e2e579f18aeefcd05397e114419",
        ("ghex_comm", "oomph_comm"),
    ),
}
_VENDOR = "vendor"  # resources are unpacked to <source>/vendor/<name>

_LIBFABRIC_PROVIDERS = ("tcp", "sockets", "psm2", "verbs", "gni")  # those of oomph 0.1.0


class Ghexbench(CMakePackage):
    """GHEX-BENCH cartex: a 3D halo-exchange benchmark on a Cartesian grid of MPI ranks.

    Every rank owns a box of the domain and exchanges halos with its 26 neighbours through one
    of several communication runtimes: plain MPI (``mpi_comm``), GHEX (``ghex_comm``) or oomph
    (``oomph_comm``). Rank placement comes from hwcart (``--node/--socket/--numa/--l3/--core``)
    or MPI_Cart_create (``--MPICart``); ``--check`` verifies the halos.

    Runtime, transport and exchange algorithm are compile-time choices: one spec builds one
    configuration and installs it as bin/benchmark_<runtime>[_<rma>][_<transport>][_staged]
    [_field_by_field], the names of upstream's build script (cartex/build/configure) and
    published results (benchmark_mpi_comm, benchmark_ghex_comm_mpi, benchmark_ghex_comm_ucx,
    benchmark_ghex_comm_xpmem_mpi, ...), with _<rma> only if not none, _<transport> only for
    ghex_comm and oomph_comm, and suffixes for the two settings that script left out of the
    name. precision, evict_cache and pack_z do not change the name (the default here is
    upstream's CMake default, float, which the published Betzy tables of 2021-02/03 used;
    upstream's Betzy build switched to double on 2021-03-09).
    """

    homepage = "https://github.com/ghex-org/ghexbench"
    git = "https://github.com/ghex-org/ghexbench.git"

    license("BSD-3-Clause")

    # No release tags upstream: versions are commits of the main branch, named by date.
    version(
        "2023-05-08",
        sha256="7b91c5f49aaf3d5c499412c749b7b6a4668e4a5e3d97184500b58129d4aa83aa",
        url="https://github.com/ghex-org/ghexbench/archive/435acd2eb204e36aa90e2e21bfef38fb93c320cc.tar.gz",
    )

    for _name, (_url, _sha256, _runtimes) in _RESOURCES.items():
        for _runtime in _runtimes:
            resource(
                name=_name,
                url=_url,
                sha256=_sha256,
                destination=_VENDOR,
                placement=_name,
                when=f"@2023-05-08 runtime={_runtime}",
            )

    variant(
        "runtime",
        default="mpi_comm",
        values=("mpi_comm", "ghex_comm", "oomph_comm"),
        multi=False,
        description="Communication runtime (CARTEX_RUNTIME): plain MPI, GHEX or oomph",
    )
    variant(
        "transport",
        default="mpi",
        values=("mpi", "ucx", "libfabric"),
        multi=False,
        description="Transport of GHEX/oomph (CARTEX_TRANSPORT_BACKEND); mpi_comm is always MPI",
    )
    variant(
        "libfabric_provider",
        default="tcp",
        values=_LIBFABRIC_PROVIDERS,
        multi=False,
        when="transport=libfabric",
        description="libfabric provider oomph uses (OOMPH_LIBFABRIC_PROVIDER)",
    )
    variant(
        "rma",
        default="none",
        values=("none", "threads", "xpmem"),
        multi=False,
        description="GHEX in-node RMA (CARTEX_RMA): none, between the threads of a rank, or "
        "between ranks through xpmem",
    )
    variant(
        "staged",
        default=False,
        description="GHEX staged exchange: 3 one-dimensional exchanges x, y, z of 2 messages "
        "each instead of 26 neighbour messages (CARTEX_STAGED_EXCHANGE)",
    )
    variant(
        "field_by_field",
        default=False,
        description="GHEX: exchange the fields one after another instead of all in one "
        "exchange (CARTEX_FIELD_BY_FIELD)",
    )
    variant(
        "precision",
        default="float",
        values=("float", "double"),
        multi=False,
        description="Floating-point type of the fields (CARTEX_FLOAT)",
    )
    variant(
        "evict_cache",
        default=False,
        description="Prefetch a 2.5 MB buffer before every timed exchange to push the fields "
        "out of cache (CARTEX_EVICT_CACHE; x86 only)",
    )
    variant(
        "pack_z",
        default=False,
        description="mpi_comm/oomph_comm: pack the z halos into buffers instead of sending them "
        "straight from the field (CARTEX_MPI_PACK_Z)",
    )

    # Spack >= 1.0 attaches compilers through language dependencies; Spack 0.x has no such
    # virtual packages (spack.package_api_version exists only in Spack >= 1.0). C is needed for
    # hwcart's CMake config (MPI::MPI_C).
    if hasattr(spack, "package_api_version"):
        depends_on("c", type="build")
        depends_on("cxx", type="build")

    depends_on("cmake@3.17:", type="build")
    depends_on("mpi")
    depends_on("hwcart")
    depends_on("hwloc@2:")

    # The vendored GHEX stack
    for _runtime in ("ghex_comm", "oomph_comm"):
        with when(f"runtime={_runtime}"):
            depends_on("numactl@2.0.12:")  # hwmalloc
            # header-only use; 1.73 (upstream's Betzy build) and 1.74 are known to work
            depends_on("boost@1.73:", type="build")
    depends_on("ucx@1.8: +thread_multiple", when="transport=ucx")
    depends_on("libfabric", when="transport=libfabric")
    for _provider in _LIBFABRIC_PROVIDERS:
        depends_on(
            f"libfabric fabrics={_provider}",
            when=f"transport=libfabric libfabric_provider={_provider}",
        )
    depends_on("xpmem", when="rma=xpmem")

    # Impossible combinations
    for _transport in ("ucx", "libfabric"):
        conflicts(
            f"transport={_transport}",
            when="runtime=mpi_comm",
            msg=f"transport={_transport} needs runtime=ghex_comm or runtime=oomph_comm: "
            "runtime=mpi_comm always communicates through MPI",
        )
    for _runtime in ("mpi_comm", "oomph_comm"):
        for _rma in ("threads", "xpmem"):
            conflicts(
                f"rma={_rma}",
                when=f"runtime={_runtime}",
                msg=f"rma={_rma} is GHEX's in-node RMA and needs runtime=ghex_comm "
                f"(runtime={_runtime} has no RMA)",
            )
        conflicts(
            "+staged",
            when=f"runtime={_runtime}",
            msg=f"+staged selects GHEX's staged exchange and needs runtime=ghex_comm "
            f"(runtime={_runtime} always exchanges in stages x, y, z)",
        )
        conflicts(
            "+field_by_field",
            when=f"runtime={_runtime}",
            msg=f"+field_by_field is a GHEX option and needs runtime=ghex_comm "
            f"(runtime={_runtime} always exchanges field by field)",
        )
    conflicts(
        "+pack_z",
        when="runtime=ghex_comm",
        msg="+pack_z applies to runtime=mpi_comm and runtime=oomph_comm only "
        "(GHEX packs all halos itself)",
    )
    requires(
        "target=x86_64:",
        when="+evict_cache",
        msg="+evict_cache uses the x86 intrinsic _mm_prefetch",
    )

    @property
    def benchmark_name(self):
        """Name of the installed executable (see the class docstring)."""
        spec = self.spec

        def value(variant):
            v = spec.variants[variant].value
            return v if isinstance(v, str) else v[0]  # a tuple in abstract specs

        runtime = value("runtime")
        name = f"benchmark_{runtime}"
        if runtime != "mpi_comm":
            if value("rma") != "none":
                name += "_" + value("rma")
            name += "_" + value("transport")
        if spec.satisfies("+staged"):
            name += "_staged"
        if spec.satisfies("+field_by_field"):
            name += "_field_by_field"
        return name

    @property
    def private_lib_dir(self):
        """Where the libraries of the vendored GHEX stack are installed."""
        return join_path(self.prefix.lib, "ghexbench")

    @property
    def sanity_check_is_file(self):
        return [join_path("bin", self.benchmark_name)]

    def patch(self):
        # Use the hwcart dependency rather than fetching hwcart's master branch. Upstream's
        # find_package(HWCART) in src/ makes the imported target visible there only, not in
        # cartex/src/, and HWCARTConfig.cmake needs MPI::MPI_C while the project enables CXX
        # only: enable C and find hwcart at the top level.
        filter_file(
            r"^project\(ghexbench VERSION 0\.1 LANGUAGES CXX\)$",
            "project(ghexbench VERSION 0.1 LANGUAGES C CXX)\nfind_package(HWCART REQUIRED CONFIG)",
            "CMakeLists.txt",
        )

    def cmake_args(self):
        spec = self.spec
        runtime = spec.variants["runtime"].value
        transport = spec.variants["transport"].value
        args = [
            self.define("GHEXBENCH_BUILD_CARTEX", True),
            self.define("GHEXBENCH_BUILD_P2P", False),
            self.define("GHEXBENCH_ENABLE_DEVICE", False),
            self.define("CARTEX_RUNTIME", runtime),
            self.define("CARTEX_FLOAT", spec.variants["precision"].value),
            self.define_from_variant("CARTEX_EVICT_CACHE", "evict_cache"),
            # hwcart.h (which includes mpi.h) is included inside extern "C": mpi.h must not pull
            # in the MPI C++ bindings (Open MPI 4 does by default).
            self.define("MPI_CXX_SKIP_MPICXX", True),
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
            self.define("MPI_CXX_COMPILER", spec["mpi"].mpicxx),
            self.define("HWCART_DIR", spec["hwcart"].package.cmake_config_dir),
            # Everything FetchContent would download is a resource: never go online.
            self.define("FETCHCONTENT_FULLY_DISCONNECTED", True),
        ]
        if runtime != "ghex_comm":
            args.append(self.define_from_variant("CARTEX_MPI_PACK_Z", "pack_z"))
        if runtime == "mpi_comm":
            return args

        vendor = join_path(self.stage.source_path, _VENDOR)
        args += [
            self.define("CARTEX_TRANSPORT_BACKEND", transport.upper()),
            self.define("FETCHCONTENT_SOURCE_DIR_OOMPH", join_path(vendor, "oomph")),
            self.define("FETCHCONTENT_SOURCE_DIR_HWMALLOC", join_path(vendor, "hwmalloc")),
            # One oomph library for the selected transport (GHEX forces the same for ghex_comm).
            self.define("OOMPH_WITH_MPI", transport == "mpi"),
            self.define("OOMPH_WITH_UCX", transport == "ucx"),
            self.define("OOMPH_WITH_LIBFABRIC", transport == "libfabric"),
            # The benchmark and the vendored libraries find each other in private_lib_dir.
            self.define("CMAKE_BUILD_WITH_INSTALL_RPATH", True),
            self.define(
                "CMAKE_INSTALL_RPATH", [self.private_lib_dir, self.prefix.lib, self.prefix.lib64]
            ),
        ]
        if transport == "libfabric":
            args.append(
                self.define("OOMPH_LIBFABRIC_PROVIDER", spec.variants["libfabric_provider"].value)
            )
        if runtime == "ghex_comm":
            args += [
                self.define("CARTEX_RMA", spec.variants["rma"].value),
                self.define_from_variant("CARTEX_STAGED_EXCHANGE", "staged"),
                self.define_from_variant("CARTEX_FIELD_BY_FIELD", "field_by_field"),
                self.define("FETCHCONTENT_SOURCE_DIR_GHEX", join_path(vendor, "ghex")),
                self.define("FETCHCONTENT_SOURCE_DIR_GRIDTOOLS", join_path(vendor, "gridtools")),
                # GHEX prefers an installed GridTools 2.x; always take the pinned one.
                self.define("CMAKE_DISABLE_FIND_PACKAGE_GridTools", True),
            ]
        return args

    def install(self, spec, prefix):
        # Upstream has no install rule for the benchmark, and `make install` would add the
        # headers, CMake configs and libraries of the vendored GHEX stack to the prefix, where
        # they would shadow Spack's ghex/oomph/hwmalloc/gridtools in views.
        mkdirp(prefix.bin)
        install(
            join_path(self.build_directory, "cartex", "src", "bin", "benchmark"),
            join_path(prefix.bin, self.benchmark_name),
        )
        if spec.satisfies("runtime=mpi_comm"):
            return
        mkdirp(self.private_lib_dir)
        for lib in find(join_path(self.build_directory, "_deps"), "lib*.so*"):
            install(lib, self.private_lib_dir)
