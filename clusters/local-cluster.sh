#!/usr/bin/env bash
# A Ray cluster on this machine, to rehearse a cluster run: `raystudy cluster` under the
# name the docs and older scripts use.
#
#   clusters/local-cluster.sh start                      # one node: the head, all cores
#   clusters/local-cluster.sh start --workers 2          # head + 2 static 1-CPU nodes
#   clusters/local-cluster.sh start --autoscale clusters/local-autoscale.yaml
#   clusters/local-cluster.sh status
#   clusters/local-cluster.sh stop      # ends exactly the processes `start` started
#
# Settings (environment): RAYSTUDY_CLUSTER_DIR (state, logs, Ray's temp dir; default
# /tmp/raystudy-cluster), NUM_CPUS (the head's CPUs; default all cores, 0 with
# --autoscale), RAY_PORT (6379), DASHBOARD_PORT (8265), CLIENT_PORT (10001), AGENT_PORT
# (52365), OBJECT_STORE_BYTES (Ray's default). Token authentication stays on; `stop`
# never runs `ray stop` (which would end every Ray on the machine).
set -euo pipefail
exec "${RAYSTUDY:-raystudy}" cluster "$@"
