# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
#
# commstack recipe: builtin OSU Micro-Benchmarks, plus the build against SimGrid's SMPI.
# Package API v1 layout; loads in Spack 1.x and 0.2x.

try:  # Spack >= 1.0: the builtin recipes live in the builtin package repository
    from spack_repo.builtin.packages.osu_micro_benchmarks.package import (
        OsuMicroBenchmarks as BuiltinOsuMicroBenchmarks,
    )
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.osu_micro_benchmarks import (
        OsuMicroBenchmarks as BuiltinOsuMicroBenchmarks,
    )

from spack.package import *


class OsuMicroBenchmarks(BuiltinOsuMicroBenchmarks):
    """OSU Micro-Benchmarks, the builtin recipe, plus the build against SimGrid's SMPI.

    SMPI's ``smpicc`` links MPI programs as shared objects that only ``smpirun`` can start, so
    ``configure``'s "can the compiler build a runnable program" test fails with it ("cannot run
    C compiled programs"). SimGrid's documented remedy is ``SMPI_PRETEND_CC=1`` while
    ``configure`` runs (``smpicc`` then acts as a plain compiler with SMPI's headers and library)
    and not during the build; with ``^simgrid`` this recipe does exactly that. Everything else
    is the builtin recipe.
    """

    @run_before("configure", when="^simgrid")
    def smpi_pretend_cc(self):
        env["SMPI_PRETEND_CC"] = "1"
        # With SMPI_PRETEND_CC, smpicc prints a warning on stdout before running the compiler,
        # so libtool's `$CC -print-prog-name=ld` answers two lines and configure stops with "no
        # acceptable ld found in $PATH"; naming the linker skips that query.
        env["LD"] = which("ld", required=True).path

    @run_after("configure", when="^simgrid")
    def smpi_stop_pretending(self):
        # Objects compiled with SMPI_PRETEND_CC set would not run under smpirun.
        env.pop("SMPI_PRETEND_CC", None)
        env.pop("LD", None)
