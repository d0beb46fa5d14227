#!/bin/sh
# Wraps each broker of a local Flux test instance so that it has a host name of its own,
# fluxN for broker rank N (a UTS namespace; needs root or user namespaces):
#
#   flux start --test-size=3 --wrap="$PWD/scripts/flux_broker_host.sh" COMMAND
#
# Ranks of different brokers then report different hosts, as on a cluster (the MPI's own binding
# reports name hosts), and the instance's R lists flux[0-2]. `flux start --test-size=N` sets
# PMI_RANK for each broker (flux-start(1)).
exec unshare --uts sh -c 'hostname "flux${PMI_RANK}" && exec "$@"' sh "$@"
