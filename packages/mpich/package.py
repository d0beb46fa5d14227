# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
#
# commstack recipe: builtin MPICH, usable as an external at a prefix shared with another MPI.
# Package API v1 layout; loads in Spack 1.x and 0.2x.

import os

try:  # Spack >= 1.0: the builtin recipes live in the builtin package repository
    from spack_repo.builtin.packages.mpich.package import Mpich as BuiltinMpich
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.mpich import Mpich as BuiltinMpich

from spack.package import *


class Mpich(BuiltinMpich):
    """MPICH, the builtin recipe, plus support for Debian's suffixed compiler wrappers.

    Debian installs MPICH at /usr next to Open MPI; ``/usr/bin/mpicc`` is an alternative that
    usually points to Open MPI's wrapper, and MPICH's own is ``/usr/bin/mpicc.mpich``. For an
    external MPICH whose prefix has such suffixed wrappers, dependents compile with them, so
    ``prefix: /usr`` is enough in packages.yaml. Everything else is the builtin recipe.
    """

    def _wrapper(self, name):
        suffixed = join_path(self.prefix.bin, f"{name}.mpich")
        if self.spec.external and os.path.exists(suffixed):
            return suffixed
        return join_path(self.prefix.bin, name)

    def setup_dependent_package(self, module, dependent_spec):
        super().setup_dependent_package(module, dependent_spec)
        spec = self.spec
        spec.mpicc = self._wrapper("mpicc")
        spec.mpicxx = self._wrapper("mpicxx")
        if not spec.satisfies("~fortran"):
            spec.mpifc = self._wrapper("mpif90")
            spec.mpif77 = self._wrapper("mpif77")

    def setup_mpi_wrapper_variables(self, env):
        env.set("MPICC", self._wrapper("mpicc"))
        env.set("MPICXX", self._wrapper("mpicxx"))
        env.set("MPIF77", self._wrapper("mpif77"))
        env.set("MPIF90", self._wrapper("mpif90"))
