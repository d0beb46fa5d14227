"""Report sections in the style of a study or a published layout, one plugin module each.

A plugin defines :class:`~commstack.report.studies.base.Study` objects: when it applies to a
campaign and the section it writes. :mod:`commstack.report.document` asks every registered study
in this order; a new study is a module here and a line in :data:`STUDIES`.

* ``betzy``: tables in the layout of the published Betzy cartex results (imported files, swept
  cartex campaigns);
* ``oracle``: a step of a staged tuning (``commstack tune``) in the style of the OCI Open MPI
  tuning study; never for a plain sweep;
* ``gasnet``: flood bandwidth and RMA latency in the style of the GASNet-EX paper;
* ``deviations``: under the tables, how a campaign reproducing a study differs from its published
  setup (the records' deviation notes);
* ``guidelines``: self-consistent performance guidelines of collectives (IMB, OSU, ReproMPI).
"""

from __future__ import annotations

from typing import List

from commstack.report.studies import betzy, deviations, gasnet, guidelines, oracle
from commstack.report.studies.base import Context, Study

STUDIES: List[Study] = [betzy.PUBLISHED, betzy.CARTEX, oracle.STUDY, gasnet.STUDY,
                        deviations.STUDY, guidelines.SYNC, guidelines.STUDY,
                        guidelines.SLOW]

__all__ = ["STUDIES", "Context", "Study"]
