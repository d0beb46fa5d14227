# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
#
# commstack recipe: builtin Open MPI plus one version whose source is Debian's upstream tarball.
# Package API v1 layout; loads in Spack 1.x and 0.2x.

try:  # Spack >= 1.0: the builtin recipes live in the builtin package repository
    from spack_repo.builtin.packages.openmpi.package import Openmpi as BuiltinOpenmpi
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.openmpi import Openmpi as BuiltinOpenmpi

from spack.package import *


class Openmpi(BuiltinOpenmpi):
    """Open MPI, the builtin recipe, plus ``4.1.4-debian``: the 4.1.4 release as Debian ships it.

    ``openmpi_4.1.4.orig.tar.xz`` of Debian's ``openmpi 4.1.4-3`` (bookworm) source package is
    open-mpi.org's 4.1.4 release tree (generated ``configure`` included, nothing excluded),
    recompressed, so its bytes differ from the ``.tar.bz2`` whose checksum the builtin ``4.1.4``
    records. Its sha256 is the one in Debian's ``openmpi_4.1.4-3.dsc``; commstack's source
    mirror carries it (``packages/mirror-sources.tsv``). The version sorts with 4.1.4 for the
    recipe's ``@4.1.4:``-style conditions (e.g. ``fabrics=ucc`` needs ``@4.1.4:``).
    """

    version(
        "4.1.4-debian",
        sha256="ddaee7dbdb01eb4fab1fda5b5e03e8bbff026711806c095c1f39bb410f99f263",
        url="https://deb.debian.org/debian/pool/main/o/openmpi/openmpi_4.1.4.orig.tar.xz",
    )


# The builtin recipe patches @4.1.2:4.1.4 with a GitHub commit download (unsigned long reductions,
# open-mpi/ompi#10648) that no offline source here reproduces; Debian's 4.1.4-3 does not carry it
# either. 4.1.4-debian is built without it, like Debian's own build; the builtin 4.1.4 keeps it.
_REMOTE_PATCH_SHA256 = "12f3aabbcdb02f28138e250273c2f62591db4b1f9f8aa3dcc3ef9ed551f4f587"
for _when, _patches in list(Openmpi.patches.items()):
    _kept = [p for p in _patches if getattr(p, "sha256", None) != _REMOTE_PATCH_SHA256]
    if len(_kept) != len(_patches):
        _narrowed = Spec("@4.0.7,4.1.2:4.1.3,=4.1.4")
        Openmpi.patches.setdefault(_narrowed, []).extend(p for p in _patches if p not in _kept)
        if _kept:
            Openmpi.patches[_when] = _kept
        else:
            del Openmpi.patches[_when]
