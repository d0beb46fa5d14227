# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
#
# commstack package repository (Package API v1 layout); loads in Spack 1.x and 0.2x.

import os

import spack
from spack.package import *

#: The conduits of builtin gasnet's `conduits` variant.
CONDUITS = ("smp", "udp", "mpi", "ibv", "ucx", "ofi")

#: Tests built for every conduit: the RMA latency (testsmall) and flood-bandwidth (testlarge)
#: benchmarks of Hargrove & Bonachea's GASNet-EX vs MPI RMA study, and the Active Message one.
PROGRAMS = ("testsmall", "testlarge", "testam")

# GASNet's tests/Makefile.in, rule "test%" ("a model for how GASNet clients should be built"),
# fed by the installed <conduit>-conduit/<conduit>-seq.mak fragment instead of a build tree.
CLIENT_MAKEFILE = """\
include $(GASNET_FRAGMENT)
test%: $(SRCDIR)/test%.c
\t$(GASNET_CC) -I$(SRCDIR) $(GASNET_CPPFLAGS) $(GASNET_CFLAGS) -c -o $@.o $<
\t$(GASNET_LD) $(GASNET_LDFLAGS) -o $@ $@.o $(GASNET_LIBS)
"""


class GasnetTests(Package):
    """GASNet-EX microbenchmarks from GASNet's own test suite, built as clients of an installed
    GASNet-EX (builtin ``gasnet``, or a site's external build) for each selected conduit.

    Installs ``bin/<test>-<conduit>`` for testsmall (blocking Put/Get round-trip latency),
    testlarge (non-blocking Put/Get flood bandwidth) and testam (Active Message latency and
    bandwidth), SEQ thread mode. The commands of Hargrove and Bonachea, "GASNet-EX RMA
    Communication Performance on Recent Supercomputing Systems" (2022, doi:10.25344/S40C7D),
    on two nodes with one process each::

        srun -n2 -N2 testlarge-ofi -m -in 10000 4194304 B   # bandwidth, MiB/s
        srun -n2 -N2 testsmall-ofi -m -in 1000000 4096 A    # latency

    Pick the conduit for the network: ``ofi`` on HPE Slingshot (``^gasnet ofi_provider=cxi``
    ``^libfabric`` external), ``ibv`` or ``ucx`` on InfiniBand/RoCE, ``smp`` (one node,
    ``GASNET_PSHM_NODES=2 testsmall-smp``), ``udp`` or ``mpi`` anywhere. gasnet is a run
    dependency, so its launchers (``gasnetrun_<conduit>``, ``amudprun``) are in the view.
    """

    homepage = "https://gasnet.lbl.gov"
    url = "https://gasnet.lbl.gov/EX/GASNet-2025.8.0.tar.gz"

    license("BSD-3-Clause-LBNL")

    # The same tarballs as builtin gasnet (one mirror entry serves both); each version builds
    # the tests of that release against the same gasnet release.
    version("2025.8.0", sha256="bd5919099477d1d2f59c247d006e9d1ac017c9190c974f5e069667418e5bf48d")
    version("2024.5.0", sha256="f945e80f71d340664766b66290496d230e021df5e5cd88f404d101258446daa9")
    version("2023.9.0", sha256="2d9f15a794e10683579ce494cd458b0dd97e2d3327c4d17e1fea79bd95576ce6")
    # The GASNet-EX RMA paper's release (gasnet@2022.3.0 from this repository's gasnet recipe).
    version("2022.3.0", sha256="91b59aa84c0680c807e00d3d1d8fa7c33c1aed50b86d1616f93e499620a9ba09")

    variant(
        "conduits",
        values=any_combination_of(*CONDUITS).with_default("smp"),
        description="GASNet conduits to build the tests for (gasnet gets the same conduits): "
        "ofi (HPE Slingshot), ibv or ucx (InfiniBand/RoCE), smp (one node), udp, mpi",
    )

    # Spack >= 1.0 attaches compilers through language dependencies; Spack 0.x has no such
    # virtual packages (spack.package_api_version exists only in Spack >= 1.0).
    if hasattr(spack, "package_api_version"):
        depends_on("c", type="build")
        depends_on("cxx", type="build")  # udp-conduit clients link with the C++ compiler

    depends_on("gmake", type="build")
    for _v in ("2025.8.0", "2024.5.0", "2023.9.0", "2022.3.0"):
        depends_on(f"gasnet@={_v}", when=f"@={_v}", type=("build", "link", "run"))
    for _c in CONDUITS:
        depends_on(f"gasnet conduits={_c}", when=f"conduits={_c}", type=("build", "link", "run"))

    conflicts("conduits=none", msg="at least one conduit is needed, e.g. conduits=smp")
    # The tests are built in SEQ mode, so gasnet must build its SEQ libraries (threadmode=auto
    # builds all modes; an explicit list must include seq).
    for _modes in ("par", "parsync", "par,parsync"):
        conflicts(
            f"^gasnet threadmode:={_modes}",
            msg="the tests are SEQ-mode clients: gasnet needs threadmode=auto or a list that "
            "includes seq",
        )

    @property
    def conduits(self):
        return [c for c in self.spec.variants["conduits"].value if c != "none"]

    def install(self, spec, prefix):
        gasnet = spec["gasnet"].prefix
        tests = join_path(self.stage.source_path, "tests")
        makefile = join_path(self.stage.source_path, "gasnet-client.mak")
        with open(makefile, "w") as f:
            f.write(CLIENT_MAKEFILE)
        mkdirp(prefix.bin)
        for conduit in self.conduits:
            fragment = join_path(gasnet.include, f"{conduit}-conduit", f"{conduit}-seq.mak")
            if not os.path.isfile(fragment):
                raise InstallError(
                    f"{spec['gasnet'].format('{name}@{version}')} at {gasnet} has no SEQ-mode "
                    f"{conduit}-conduit ({fragment} is missing)"
                )
            builddir = join_path(self.stage.source_path, f"build-{conduit}")
            mkdirp(builddir)
            with working_dir(builddir):
                make("-f", makefile, f"GASNET_FRAGMENT={fragment}", f"SRCDIR={tests}", *PROGRAMS)
                for program in PROGRAMS:
                    install(program, join_path(prefix.bin, f"{program}-{conduit}"))

    def test_smp(self):
        """run testsmall and testlarge over smp-conduit with 2 processes"""
        if "smp" not in self.conduits:
            raise SkipTest("Test requires conduits=smp")
        os.environ["GASNET_PSHM_NODES"] = "2"
        for program, args in (("testsmall", ["100", "4096"]), ("testlarge", ["10", "65536"])):
            with test_part(self, f"test_smp_{program}", purpose=f"run {program}-smp"):
                exe = which(join_path(self.prefix.bin, f"{program}-smp"), required=True)
                out = exe(*args, output=str.split, error=str.split)
                assert "done." in out
