#!/bin/sh
# N shards of one gloaddriver run as a Docker Swarm replicated job, started together.
#   deploy/swarm/shards.sh JOB SHARDS RESULTS -- GLOADDRIVER_FLAGS...
# e.g.
#   GLOADDRIVER_PASSWORD=secret deploy/swarm/shards.sh load 4 /srv/results -- \
#     --uri db.example:3301 --user bench --greenlets 100 --keys 4000000 --ops 1000000
# then deploy/swarm/merge.sh RESULTS JOB.
#
# Each task runs "gloaddriver FLAGS --shard auto --start-at T --json RESULTS/JOB-SLOT.json".
# --shard auto takes N from GLOADDRIVER_SHARDS and the index from the task's slot:
# GLOADDRIVER_TASK_SLOT={{.Task.Slot}} and GLOADDRIVER_NODE_ID={{.Node.ID}}. A replicated
# job's slots are 0..N-1, and Docker renders slot 0 as the node id, which is why the
# node id comes along (seen with dockerd 20.10: 3 replicas gave <node id>, 1, 2).
# --max-concurrent is N, so every shard runs at once; T is START_LEAD seconds ahead
# (default 20) so that all of them have pulled the image, started and connected by then.
#
# Environment: IMAGE (default gloaddriver:local; on several hosts, an image every node
# can pull), GLOADDRIVER_PASSWORD (passed to the tasks), START_LEAD, and RESULTS_MOUNT:
# the --mount for the results, by default a bind of RESULTS (a folder that exists on
# every node: one host, or a network file system mounted at the same path everywhere).
# Another shared volume, e.g. an NFS export through the local driver:
#   RESULTS_MOUNT='type=volume,src=gloaddriver-results,dst=/results,volume-opt=type=nfs,volume-opt=o=addr=NFS_HOST,volume-opt=device=:/export/results'
# Tasks use the host's network (--network host) and publish no ports.
set -eu
[ $# -ge 4 ] && [ "$4" = "--" ] || { echo "usage: $0 JOB SHARDS RESULTS -- GLOADDRIVER_FLAGS..." >&2; exit 2; }
job=$1 shards=$2 results=$3
shift 4
IMAGE=${IMAGE:-gloaddriver:local}
start_at=$(( $(date +%s) + ${START_LEAD:-20} ))
mount=${RESULTS_MOUNT:-type=bind,src=$results,dst=/results}

docker service create --detach --quiet --name "$job" \
  --mode replicated-job --replicas "$shards" --max-concurrent "$shards" \
  --restart-condition none --network host \
  --mount "$mount" \
  --env "GLOADDRIVER_SHARDS=$shards" \
  --env 'GLOADDRIVER_TASK_SLOT={{.Task.Slot}}' --env 'GLOADDRIVER_NODE_ID={{.Node.ID}}' \
  --env GLOADDRIVER_PASSWORD \
  --env "START_AT=$start_at" --env "JOB=$job" \
  --entrypoint sh "$IMAGE" \
  -c 'exec gloaddriver "$@" --progress 0 --shard auto --start-at "$START_AT" --json "/results/$JOB-$GLOADDRIVER_TASK_SLOT.json"' \
  gloaddriver "$@" >/dev/null 2>"/tmp/$job.create" ||
  { cat "/tmp/$job.create" >&2; rm -f "/tmp/$job.create"; exit 1; }
# (What it said besides: that a local image has no registry digest, expected here.)
rm -f "/tmp/$job.create"

# Wait until every task has finished one way or the other; say how each did.
while :; do
  states=$(docker service ps "$job" --format '{{.CurrentState}}' | awk '{print $1}')
  running=$(printf '%s\n' "$states" | grep -cvE '^(Complete|Failed|Rejected|Shutdown|Orphaned)$' || true)
  [ "$(printf '%s\n' "$states" | grep -c .)" -ge "$shards" ] && [ "$running" = 0 ] && break
  sleep 1
done
docker service ps "$job" --format '{{.Name}} {{.CurrentState}} {{.Error}}' >&2
failed=$(printf '%s\n' "$states" | grep -cv '^Complete$' || true)
if [ "$failed" != 0 ]; then
  docker service logs --raw "$job" 2>&1 | tail -n 20 >&2
  echo "$failed of $shards shards did not complete" >&2
  exit 1
fi
