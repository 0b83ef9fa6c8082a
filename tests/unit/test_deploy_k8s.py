"""deploy/k8s checked offline, as far as a machine without a cluster allows: the files
parse as YAML, the Indexed Job's command and environment parse with gloaddriver's own
flag parser into shard I/N for every index Kubernetes hands out (JOB_COMPLETION_INDEX,
which --shard auto reads), the merge step's glob takes every shard's file and not its
own output, and both jobs mount the claim that results-pvc.yaml makes."""
from __future__ import absolute_import, division, print_function

import fnmatch
import os
import re
import shlex
import shutil
import tempfile

import pytest

from gloaddriver import config as configuration
from gloaddriver.report import results

yaml = pytest.importorskip('yaml', reason='PyYAML (the test extra) is not installed')

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
K8S = os.path.join(ROOT, 'deploy', 'k8s')


def load(name):
    with open(os.path.join(K8S, name)) as f:
        return yaml.safe_load(f)


def expand(text, env):
    """Kubernetes' $(VAR) expansion in command and args."""
    def one(m):
        assert m.group(1) in env, 'args use $(%s), which the pod does not set' % m.group(1)
        return env[m.group(1)]
    return re.sub(r'\$\(([A-Za-z_][A-Za-z0-9_]*)\)', one, text)


def test_the_indexed_job_runs_shard_i_of_n_in_each_pod():
    assert len(shard_paths()) == 4


def shard_paths():
    """The --json path of every pod of the job, each pod's argv checked on the way."""
    job = load('job.yaml')
    assert (job['apiVersion'], job['kind']) == ('batch/v1', 'Job')
    spec = job['spec']
    assert spec['completionMode'] == 'Indexed'
    (c,) = spec['template']['spec']['containers']
    env = dict((e['name'], e.get('value')) for e in c['env'])
    n = int(env['GLOADDRIVER_SHARDS'])
    assert spec['completions'] == spec['parallelism'] == n   # every shard at once
    assert 'secretKeyRef' in [e for e in c['env'] if e['name'] == 'GLOADDRIVER_PASSWORD'][0][
        'valueFrom']
    # The image's entrypoint is the command the job names.
    with open(os.path.join(ROOT, 'Dockerfile')) as f:
        assert 'ENTRYPOINT ["%s"]' % c['command'][0] in f.read()
    assert c['command'] == ['gloaddriver']
    # --shard auto reads the variable Kubernetes sets in each pod of an Indexed Job.
    assert configuration.INDEX_ENV == 'JOB_COMPLETION_INDEX'
    (mount,) = [m['mountPath'] for m in c['volumeMounts']]
    assert mount == '/results'
    # The volume "mounted": a temporary folder in place of the mount path, since the
    # parser checks that the --json folder exists.
    volume = tempfile.mkdtemp()
    start_at = 1767225600
    paths = []
    try:
        for i in range(n):
            pod_env = dict(env, START_AT=str(start_at), JOB_COMPLETION_INDEX=str(i),
                           GLOADDRIVER_PASSWORD='from-the-secret')
            argv = [expand(a, pod_env) for a in c['args']]
            argv = [volume + a[len(mount):] if a.startswith(mount + '/') else a for a in argv]
            cfg = configuration.parse(argv, environ=pod_env)
            assert cfg.load.shard == (i, n)
            assert cfg.load.start_at == start_at
            assert cfg.output.json == '%s/shard-%d.json' % (volume, i)
            assert cfg.target.password == 'from-the-secret'
            paths.append(mount + cfg.output.json[len(volume):])
    finally:
        shutil.rmtree(volume)
    return paths


def test_the_merge_step_takes_every_shard_file_from_the_same_claim():
    pvc = load('results-pvc.yaml')
    assert pvc['kind'] == 'PersistentVolumeClaim'
    assert 'ReadWriteMany' in pvc['spec']['accessModes']   # pods on several nodes write
    job, merge = load('job.yaml'), load('merge-job.yaml')
    for j in (job, merge):
        (vol,) = j['spec']['template']['spec']['volumes']
        assert vol['persistentVolumeClaim']['claimName'] == pvc['metadata']['name']
    (c,) = merge['spec']['template']['spec']['containers']
    assert c['command'][:2] == ['sh', '-c']
    words = shlex.split(c['command'][2])
    assert words[:3] == ['exec', 'gloaddriver', 'merge']
    glob_arg = [w for w in words[3:] if '*' in w]
    assert len(glob_arg) == 1
    out = words[words.index('--json') + 1]
    assert all(fnmatch.fnmatch(p, glob_arg[0]) for p in shard_paths())
    assert not fnmatch.fnmatch(out, glob_arg[0])   # a second merge does not read its output
    with pytest.raises(SystemExit) as e:   # the merge command's own parser takes --json
        results.main('merge', words[3:] + ['--help'])
    assert e.value.code == 0
