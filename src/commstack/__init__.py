"""commstack: reproducible sweeps of MPI communication stacks and their runtime knobs."""

__version__ = "0.1.0"
