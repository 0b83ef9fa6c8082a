#!/bin/sh
# N shards of one gloaddriver run as a Docker Swarm replicated job, started together,
# each run exactly once.
#   deploy/swarm/shards.sh JOB SHARDS RESULTS -- GLOADDRIVER_FLAGS...
# e.g.
#   GLOADDRIVER_PASSWORD=secret PER_NODE=1 deploy/swarm/shards.sh load 4 logs -- \
#     --uri db.example:3301 --user bench --greenlets 100 --keys 4000000 --ops 1000000
# then, for RESULTS=logs, deploy/swarm/collect.py JOB SHARDS DIR and
# deploy/swarm/merge.sh DIR JOB; for a shared folder, deploy/swarm/merge.sh RESULTS JOB.
#
# Where results go (RESULTS):
#   logs    no shared disk: each task prints its JSON, gzipped and base64'd between
#           marker lines, to its stdout; collect.py reads it back with "docker service
#           logs" on a manager, whichever node the task ran on.
#   a path  a folder every node has at that path (one host, or NFS mounted everywhere),
#           bind-mounted at /results; or give RESULTS_MOUNT, e.g. an NFS volume:
#   RESULTS_MOUNT='type=volume,src=gloaddriver-results,dst=/results,volume-opt=type=nfs,volume-opt=o=addr=NFS_HOST,volume-opt=device=:/export/results'
#           Each task writes RESULTS/JOB-SLOT.json and its exit code to JOB-SLOT.exit.
#
# Each task runs "gloaddriver FLAGS --shard auto --start-at T --json ...".
# --shard auto takes N from GLOADDRIVER_SHARDS and the index from the task's slot:
# GLOADDRIVER_TASK_SLOT={{.Task.Slot}} and GLOADDRIVER_NODE_ID={{.Node.ID}}. A replicated
# job's slots are 0..N-1, and Docker renders slot 0 as the node id, which is why the
# node id comes along (seen with dockerd 20.10: 3 replicas gave <node id>, 1, 2).
# --max-concurrent is N, so every shard runs at once; T is START_LEAD seconds ahead
# (default 20) so that all of them have started and connected by then.
#
# Runs once: a replicated job makes new tasks until SHARDS of them have exited 0, and
# --restart-condition none does not stop that (seen here with dockerd 20.10: a task
# that exited 1 was replaced again and again). A shard exits 1 when some ops failed and
# 4 when a threshold was missed, and is done all the same; so the task's command exits
# 0 after gloaddriver, whatever its code, and records that code next to the result.
# Only a task that could not start at all (no image on its node, say) fails; this
# script then names it and exits 1.
#
# Environment: IMAGE (default gloaddriver:local; on several hosts, an image every node
# has: pulled from a registry or loaded with docker save | docker load), PER_NODE (at
# most this many shards on one node: --replicas-max-per-node), CONSTRAINT (a placement
# constraint, e.g. node.labels.gloaddriver==load), GLOADDRIVER_PASSWORD (passed to the
# tasks), START_LEAD, JOB_TIMEOUT (seconds to wait for the tasks, default 900).
# Tasks use the host's network (--network host) and publish no ports.
set -eu
[ $# -ge 4 ] && [ "$4" = "--" ] || { echo "usage: $0 JOB SHARDS RESULTS|logs -- GLOADDRIVER_FLAGS..." >&2; exit 2; }
job=$1 shards=$2 results=$3
shift 4
case $shards in ''|*[!0-9]*|0) echo "$0: SHARDS must be a positive number, got '$shards'" >&2; exit 2;; esac
IMAGE=${IMAGE:-gloaddriver:local}
start_at=$(( $(date +%s) + ${START_LEAD:-20} ))
if [ "$results" = logs ]; then
  mount_flags=""
else
  mount_flags="--mount ${RESULTS_MOUNT:-type=bind,src=$results,dst=/results}"
fi
extra=""
[ -z "${PER_NODE:-}" ] || extra="$extra --replicas-max-per-node $PER_NODE"

# The task's command: gloaddriver, then the result (to the logs when RESULTS=logs),
# then exit 0 (see "Runs once" above). The marker line carries the real exit code.
wrapper='
out=/tmp/$JOB-$GLOADDRIVER_TASK_SLOT.json
[ "$RESULTS" = logs ] || out=/results/$JOB-$GLOADDRIVER_TASK_SLOT.json
gloaddriver "$@" --progress 0 --shard auto --start-at "$START_AT" --json "$out"
rc=$?
if [ "$RESULTS" = logs ]; then
  # Numbered lines and their count: "docker service logs" of a task on another node
  # can deliver lines out of order (seen here), so the reader sorts and checks them.
  if [ -f "$out" ]; then gzip -c "$out" | base64 > "$out.b64"; else : > "$out.b64"; fi
  echo "GLOADDRIVER-RESULT-BEGIN job=$JOB slot=$GLOADDRIVER_TASK_SLOT node=$GLOADDRIVER_NODE_ID exit=$rc"
  awk '"'"'{print "GLOADDRIVER-RESULT " NR " " $0}'"'"' "$out.b64"
  echo "GLOADDRIVER-RESULT-END lines=$(wc -l < "$out.b64")"
else
  echo "$rc" > "/results/$JOB-$GLOADDRIVER_TASK_SLOT.exit"
fi
echo "gloaddriver exited $rc" >&2
exit 0'

# shellcheck disable=SC2086  # mount_flags, extra: words on purpose
docker service create --detach --quiet --name "$job" \
  --mode replicated-job --replicas "$shards" --max-concurrent "$shards" \
  --restart-condition none --network host $mount_flags $extra \
  ${CONSTRAINT:+--constraint "$CONSTRAINT"} \
  --env "GLOADDRIVER_SHARDS=$shards" \
  --env 'GLOADDRIVER_TASK_SLOT={{.Task.Slot}}' --env 'GLOADDRIVER_NODE_ID={{.Node.ID}}' \
  --env GLOADDRIVER_PASSWORD \
  --env "START_AT=$start_at" --env "JOB=$job" --env "RESULTS=$results" \
  --entrypoint sh "$IMAGE" -c "$wrapper" gloaddriver "$@" >/dev/null 2>"/tmp/$job.create" ||
  { cat "/tmp/$job.create" >&2; rm -f "/tmp/$job.create"; exit 1; }
# (What it said besides: that a local image has no registry digest, expected here.)
rm -f "/tmp/$job.create"

# Wait until SHARDS tasks have ended one way or the other (none still starting or
# running). The caller removes the job (docker service rm) once it has read the results:
# the logs go with the service, and so does any further try of a task that never started.
deadline=$(( $(date +%s) + ${JOB_TIMEOUT:-900} ))
while :; do
  docker service inspect "$job" >/dev/null 2>&1 ||
    { echo "$0: the job $job is gone (removed, or this node left the swarm)" >&2; exit 1; }
  states=$(docker service ps "$job" --format '{{.CurrentState}}' | awk '{print $1}')
  ended=$(printf '%s\n' "$states" | grep -cE '^(Complete|Failed|Rejected|Shutdown|Orphaned)$' || true)
  busy=$(printf '%s\n' "$states" | grep -cE '^(Assigned|Accepted|Preparing|Ready|Starting|Running)$' || true)
  [ "$ended" -ge "$shards" ] && [ "$busy" = 0 ] && break
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "$0: the tasks did not end within ${JOB_TIMEOUT:-900} s" >&2
    break
  fi
  sleep 1
done
docker service ps "$job" --no-trunc --format '{{.Name}} {{.Node}} {{.CurrentState}} {{.Error}}' >&2
complete=$(printf '%s\n' "$states" | grep -c '^Complete$' || true)
if [ "$complete" != "$shards" ]; then
  docker service ps "$job" --no-trunc --format '{{.Name}} {{.Node}} {{.CurrentState}} {{.Error}}' |
    grep -v ' Complete ' | sed 's/^/not run: /' >&2 || true
  echo "$complete of $shards shards ran (each task that did not is named above)" >&2
  exit 1
fi
