"""Verified placement: parse where the MPI bound each rank, map it onto the node's hwloc topology
and check it against the requested mapping (see check.py for the rules)."""
