"""Rehearsals: another machine's campaign run at small scale on the local Slurm test cluster.

`counterparts` maps each remote stack (and each hardware-bound runtime value) to what runs here,
`scale` cuts a point down to the cluster (nodes, ranks, sizes: each benchmark family's own
`scale_down`), `build` writes the rehearsal's matrix or tuning plan with what was changed.
"""
