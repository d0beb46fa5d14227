# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
#
# commstack recipe: builtin GASNet-EX plus release 2022.3.0. Package API v1 layout; loads in
# Spack 1.x and 0.2x.

try:  # Spack >= 1.0: the builtin recipes live in the builtin package repository
    from spack_repo.builtin.packages.gasnet.package import Gasnet as BuiltinGasnet
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.gasnet import Gasnet as BuiltinGasnet

from spack.package import *


class Gasnet(BuiltinGasnet):
    """GASNet-EX, the builtin recipe, plus release 2022.3.0: the version of Hargrove and
    Bonachea, "GASNet-EX RMA Communication Performance on Recent Supercomputing Systems" (2022,
    doi:10.25344/S40C7D), which builtin gasnet no longer lists (it keeps releases under two years
    old). The sha256 is builtin gasnet's last entry for it (spack-packages before d37780746a);
    the tarball is also kept in github.com/StanfordLegion/gasnet (packages/mirror-sources.tsv).
    Not deprecated here, so that ``gasnet@=2022.3.0`` concretizes without ``--deprecated``.
    Everything else (variants, configure arguments) is the builtin recipe; options that
    2022.3.0's configure does not know are reported by configure as unrecognized and ignored.
    """

    version("2022.3.0", sha256="91b59aa84c0680c807e00d3d1d8fa7c33c1aed50b86d1616f93e499620a9ba09")
