"""`commstack machine capture`: read the machine itself and propose its facts.

What `machine check` reads (node layout, OS and glibc, Slurm, devices and providers, kernel
modules, environment modules, the launchers' PMI libraries, every external's version) plus
`spack external find` for the communication stack's packages, each reading with its provenance
(host, date, command). The proposal is the committed machine.yaml and packages.yaml with each
captured value that differs put in place, a comment naming its provenance beside it.
"""

from commstack.machine.capture.proposal import Proposal, propose
from commstack.machine.capture.readings import Provenance, Reading, capture_readings

__all__ = ["Proposal", "Provenance", "Reading", "capture_readings", "propose"]
