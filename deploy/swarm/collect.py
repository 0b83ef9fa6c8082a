#!/usr/bin/env python3
"""Gathers the shards' results of a deploy/swarm/shards.sh job run with RESULTS=logs,
with no shared disk: on a manager, it reads each task's log through "docker service
logs" (Docker fetches it from whichever node ran the task), decodes the JSON that the
task printed between its marker lines (gzip, base64) and writes DIR/JOB-I.json for
shard I, ready for deploy/swarm/merge.sh DIR JOB.

    deploy/swarm/collect.py JOB SHARDS DIR

It prints one line per shard (its index, node, task and gloaddriver's exit code: 1 when
some ops failed, 4 for a missed threshold; the shard is done and merged all the same),
names each task that left no result (could not start, or exited before writing one),
and says which shard indices are missing or came more than once. DIR/JOB.tasks.json
keeps the same as data. Exit 0 when each of the SHARDS indices came exactly once, else 1;
2 for bad arguments. Standard library only, Python 2.7 or 3."""
from __future__ import absolute_import, division, print_function

import base64
import gzip
import io
import json
import os
import re
import subprocess
import sys
import time

BEGIN = re.compile(r'^GLOADDRIVER-RESULT-BEGIN job=(\S+) slot=(\S+) node=(\S+) exit=(\d+)$')
LINE = re.compile(r'^GLOADDRIVER-RESULT (\d+) (\S*)$')
END = re.compile(r'^GLOADDRIVER-RESULT-END lines=(\d+)$')
NODE_LABEL = 'gloaddriver.node'


def docker(*args):
    out = subprocess.check_output(('docker',) + args, stderr=subprocess.STDOUT)
    return out.decode('utf-8', 'replace')


def tasks(job):
    """Every task the job made (reruns included): id, slot, node id, state, error."""
    found = []
    for task_id in docker('service', 'ps', job, '-q', '--no-trunc').split():
        info = json.loads(docker('inspect', task_id))[0]
        status = info.get('Status', {})
        found.append({'task': task_id, 'slot': info.get('Slot'),
                      'node_id': info.get('NodeID', ''), 'state': status.get('State'),
                      'error': status.get('Err', '')})
    return found


def node_names():
    """Node id -> a readable name: its gloaddriver.node label, else its host name, with
    its address (several nodes can share one host name, as the namespaced ones here)."""
    names = {}
    for node_id in docker('node', 'ls', '-q').split():
        info = json.loads(docker('node', 'inspect', node_id))[0]
        label = info.get('Spec', {}).get('Labels', {}).get(NODE_LABEL)
        host = info.get('Description', {}).get('Hostname', '?')
        addr = info.get('Status', {}).get('Addr', '?')
        names[info['ID']] = '%s (%s)' % (label or host, addr)
    return names


def result_of(task_id, tries=60):
    """(exit code, result JSON dict or None) from a task's log, or None when the log has
    no marker. A finished task's last lines can reach the manager a moment late: read
    again for a while when a begin marker has no end yet."""
    for _ in range(tries):
        log = docker('service', 'logs', '--raw', '--no-trunc', task_id)
        found = parse(log)
        if found != 'partial':
            return found
        time.sleep(0.5)
    return None


def parse(log):
    """(exit code, result or None) from a task's log; 'partial' while a numbered line or
    the end marker has not come yet; None when the log has no begin marker. Lines are
    put in order by their numbers: the logs of a task on another node can arrive out
    of order."""
    begin, body, count = None, {}, None
    for line in log.splitlines():
        line = line.strip()
        m = BEGIN.match(line)
        if m:
            begin = m
            continue
        m = LINE.match(line)
        if m:
            body[int(m.group(1))] = m.group(2)
            continue
        m = END.match(line)
        if m:
            count = int(m.group(1))
    if begin is None:
        return None
    if count is None or sorted(body) != list(range(1, count + 1)):
        return 'partial'
    doc = None
    if count:
        data = base64.b64decode(''.join(body[i] for i in range(1, count + 1)))
        doc = json.loads(gzip.GzipFile(fileobj=io.BytesIO(data)).read().decode('utf-8'))
    return int(begin.group(4)), doc


def collect(job, n, out_dir):
    """Writes the shards' files; returns (report lines, problems, task rows)."""
    names = node_names()
    lines, problems, rows, by_index = [], [], [], {}
    for t in sorted(tasks(job), key=lambda t: str(t['slot'])):
        node = names.get(t['node_id'], t['node_id'] or 'no node')
        row = dict(t, node=node, exit=None, shard=None)
        rows.append(row)
        found = result_of(t['task']) if t['state'] == 'complete' else None
        if found is None or found[1] is None:
            why = t['error'] or ('exit %s, no result written' % found[0] if found else
                                 'no result in its log')
            problems.append('task %s on %s did not run a shard: %s: %s'
                            % (t['task'][:12], node, t['state'], why))
            if found:
                row['exit'] = found[0]
            continue
        row['exit'], doc = found
        row['shard'] = shard = doc['manifest'].get('shard')
        by_index.setdefault(shard, []).append(row)
        if len(by_index[shard]) > 1:
            problems.append('shard %s ran more than once (tasks %s)' % (
                shard, ', '.join(r['task'][:12] for r in by_index[shard])))
            continue
        index = int(shard.split('/')[0])
        with open(os.path.join(out_dir, '%s-%d.json' % (job, index)), 'w') as f:
            json.dump(doc, f)
        lines.append('shard %s: node %s, task %s, exit %d%s' % (
            shard, node, t['task'][:12], row['exit'],
            {1: ' (some ops failed)', 4: ' (a threshold missed)'}.get(row['exit'], '')))
    lines.sort(key=lambda l: int(l.split()[1].split('/')[0]))
    missing = ['%d/%d' % (i, n) for i in range(n) if '%d/%d' % (i, n) not in by_index]
    if missing:
        problems.append('shards missing: %s' % ', '.join(missing))
    return lines, problems, rows


def main(argv):
    if len(argv) != 4 or not argv[2].isdigit() or int(argv[2]) < 1 or not os.path.isdir(argv[3]):
        print('usage: collect.py JOB SHARDS DIR (SHARDS a positive number, DIR a folder)',
              file=sys.stderr)
        return 2
    job, n, out_dir = argv[1], int(argv[2]), argv[3]
    try:
        lines, problems, rows = collect(job, n, out_dir)
    except subprocess.CalledProcessError as e:
        print('collect.py: %s: %s' % (' '.join(e.cmd), e.output.decode('utf-8', 'replace').strip()),
              file=sys.stderr)
        return 1
    with open(os.path.join(out_dir, job + '.tasks.json'), 'w') as f:
        json.dump({'shards': n, 'tasks': rows, 'problems': problems}, f, indent=1)
    for line in lines:
        print(line)
    for p in problems:
        print('collect.py: %s' % p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
