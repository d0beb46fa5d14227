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


class Hwcart(CMakePackage):
    """hwcart: hardware-aware Cartesian MPI communicators.

    Given a grid per level of the memory hierarchy (hardware thread, core, L3 cache, NUMA node,
    socket, node), hwcart places MPI ranks on a 3D Cartesian grid so that neighbours share the
    closest memory domain, numbers them in a chosen order (XYZ, ZYX, ...) and can convert the
    result to an MPI Cartesian communicator. Used by GHEX-BENCH cartex (``ghexbench``).

    The topology comes from hwloc (``+hwloc``, the default) or, with ``~hwloc``, from Open MPI's
    ``OMPI_COMM_TYPE_*`` split types, which only Open MPI has. Ranks must be bound to cores.
    """

    homepage = "https://github.com/NordicHPC/hwcart"
    git = "https://github.com/NordicHPC/hwcart.git"

    license("BSD-3-Clause")

    # No release tags upstream: versions are commits of the master branch, named by date.
    # The sources' own version (version.txt) is 0.1.0.
    version(
        "2023-01-31",
        sha256="5a321c048d4b9230853abba8eea0cae4081dc8ee1aee4c3315580596e620ada0",
        url="https://github.com/NordicHPC/hwcart/archive/282ed6961a3e2267b85948ce8fbccca918031c82.tar.gz",
    )

    variant(
        "hwloc",
        default=True,
        description="Take the hardware topology from hwloc (needed for every MPI but Open MPI)",
    )
    variant("fortran", default=False, description="Build and install the Fortran module")

    # Spack >= 1.0 attaches compilers through language dependencies; Spack 0.x has no such
    # virtual packages (spack.package_api_version exists only in Spack >= 1.0).
    if hasattr(spack, "package_api_version"):
        depends_on("c", type="build")
        depends_on("fortran", type="build", when="+fortran")

    depends_on("cmake@3.14.5:", type="build")
    depends_on("mpi")
    depends_on("hwloc@2:", when="+hwloc")

    requires(
        "^openmpi",
        when="~hwloc",
        msg="hwcart~hwloc takes the topology from Open MPI's OMPI_COMM_TYPE_* split types and "
        "builds only with Open MPI: use hwcart+hwloc with other MPIs",
    )

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("HWCART_USE_HWLOC", "hwloc"),
            self.define_from_variant("HWCART_USE_FORTRAN", "fortran"),
            self.define("HWCART_USE_TESTS", False),
            # HWCARTConfig.cmake goes to <libdir>/cmake (not <libdir>/cmake/HWCART): keep it at a
            # fixed place for dependents (HWCART_DIR=<prefix>/lib/cmake), also where lib64 rules.
            self.define("CMAKE_INSTALL_LIBDIR", "lib"),
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
        ]
        if spec.satisfies("+fortran"):
            args.append(self.define("MPI_Fortran_COMPILER", spec["mpi"].mpifc))
        return args

    @property
    def cmake_config_dir(self):
        """Directory holding HWCARTConfig.cmake (pass it to CMake as HWCART_DIR)."""
        return self.prefix.lib.cmake
