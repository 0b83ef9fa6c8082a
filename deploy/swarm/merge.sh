#!/bin/sh
# The merge step after deploy/swarm/shards.sh: one container of the same image on the
# host that holds the results (no network), merging RESULTS/JOB-*.json into
# RESULTS/JOB-merged.json and printing the merged table.
#   deploy/swarm/merge.sh RESULTS JOB
set -eu
[ $# -eq 2 ] || { echo "usage: $0 RESULTS JOB" >&2; exit 2; }
results=$1 job=$2
IMAGE=${IMAGE:-gloaddriver:local}
docker run --rm --network none -v "$results:/results" -e "JOB=$job" --entrypoint sh "$IMAGE" \
  -c 'exec gloaddriver merge $(ls /results/"$JOB"-*.json | grep -v -- -merged.json) --json "/results/$JOB-merged.json"'
