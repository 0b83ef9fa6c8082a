"""Extra Docker Swarm nodes on this one machine, for scripts/many-hosts --nodes N.

Node 0 is the host's own engine, the swarm's manager. Node i (1..N-1) is a dockerd
started with nsenter in a network namespace ``gldmh<i>`` (not ``ip netns exec``, which
remounts /sys and hides the cgroups), joined to the swarm as a worker over a veth pair:
the host end ``gldmh<i>h`` has 10.213.<i>.1/30, the namespace end ``gldmh<i>n`` has
10.213.<i>.2/30 and a default route through the host end, so every node reaches the
manager and the private server on 10.213.1.1 (an address of the host) without IP
forwarding. The image reaches each node by ``docker save | docker -H ... load``.

Everything made here carries the prefix ``gldmh`` (namespaces, links) or lives under
DATA and RUN, and a swarm this module made advertises a 10.213.* address: ``cleanup()``
removes all of it by those marks, so it also undoes what a crashed earlier run left.
Standard library only (the host side needs no venv); root is needed."""
from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PREFIX = 'gldmh'
NET = '10.213'                                      # 10.213.<i>.0/30 per extra node
DATA = '/var/lib/gloaddriver-many-hosts'            # engines' data roots
RUN = '/run/gloaddriver-many-hosts'                 # exec roots, sockets, pid files, logs
LABEL = 'gloaddriver.node'                          # node label: host, gldmh1, ...
IMAGE_FILE = 'gloaddriver-many-hosts-image.'        # docker save's file, in the temp dir


def say(msg):
    print('many-hosts: %s' % msg, file=sys.stderr)
    sys.stderr.flush()


def sh(args, check=True, timeout=None, quiet=False):
    """Run a command, return its stdout (text); raise with its stderr when check fails."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    timer = None
    if timeout:
        timer = threading.Timer(timeout, p.kill)
        timer.start()
    try:
        out, err = p.communicate()
    finally:
        if timer:
            timer.cancel()
    out, err = out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')
    if check and p.returncode != 0:
        raise RuntimeError('%s: exit %s: %s' % (' '.join(args), p.returncode, err.strip()))
    if not check and p.returncode != 0 and not quiet:
        say('(ignored) %s: %s' % (' '.join(args[:4]), err.strip()[:200]))
    return out


def name(i):
    return '%s%d' % (PREFIX, i)


def host_addr(i):
    return '%s.%d.1' % (NET, i)


def node_addr(i):
    return '%s.%d.2' % (NET, i)


def sock(i):
    return 'unix://%s/%s/docker.sock' % (RUN, name(i))


def docker(i, *args):
    """A docker command line for node i (0: the host's engine)."""
    return ['docker'] + (['-H', sock(i)] if i else []) + list(args)


def check_free(n):
    """Refuse to start when an address or link we would make is already in use by
    something that is not ours (a clash with the machine's own networks)."""
    addrs = sh(['ip', '-o', 'addr', 'show'])
    routes = sh(['ip', '-o', 'route', 'show'])
    for i in range(1, n):
        net = '%s.%d.' % (NET, i)
        for line in (addrs + routes).splitlines():
            if net in line and PREFIX not in line:
                raise RuntimeError('%s0/30 is in use here (%s); cannot make node %d'
                                   % (net, line.strip(), i))


def make_namespace(i):
    """The namespace, the veth pair and their addresses."""
    ns, h, n = name(i), name(i) + 'h', name(i) + 'n'
    sh(['ip', 'netns', 'add', ns])
    sh(['ip', 'link', 'add', h, 'type', 'veth', 'peer', 'name', n])
    sh(['ip', 'link', 'set', n, 'netns', ns])
    sh(['ip', 'addr', 'add', host_addr(i) + '/30', 'dev', h])
    sh(['ip', 'link', 'set', h, 'up'])
    inside = ['ip', '-n', ns]
    sh(inside + ['link', 'set', 'lo', 'up'])
    sh(inside + ['addr', 'add', node_addr(i) + '/30', 'dev', n])
    sh(inside + ['link', 'set', n, 'up'])
    # Through the host end every host address is reachable (10.213.1.1 included):
    # local delivery on the host, so no forwarding needs to be turned on.
    sh(inside + ['route', 'add', 'default', 'via', host_addr(i)])


def start_engine(i, timeout=90):
    """dockerd of node i inside its namespace; returns once it answers."""
    ns = name(i)
    run, data = os.path.join(RUN, ns), os.path.join(DATA, ns)
    for d in (run, data):
        if not os.path.isdir(d):
            os.makedirs(d)
    log = open(os.path.join(run, 'dockerd.log'), 'ab')
    subprocess.Popen(
        ['nsenter', '--net=/var/run/netns/' + ns, 'dockerd', '--data-root', data,
         '--exec-root', os.path.join(run, 'exec'), '--pidfile', os.path.join(run, 'dockerd.pid'),
         '-H', sock(i), '--bridge', 'none', '--iptables=false', '--ip-masq=false',
         # Its own containerd namespaces, should a system containerd be shared.
         '--containerd-namespace', ns, '--containerd-plugins-namespace', ns + '-plugins'],
        # A task's image is used as it is on the node, no pull tried first: the pull has
        # no registry to reach and, from a namespace, waits ~20 s for DNS to time out.
        env=dict(os.environ, DOCKER_SERVICE_PREFER_OFFLINE_IMAGE='1'),
        stdout=log, stderr=subprocess.STDOUT, close_fds=True,
        preexec_fn=os.setsid)   # not killed with the caller's terminal or process group
    log.close()
    deadline = time.time() + timeout
    with open(os.devnull, 'w') as null:
        while time.time() < deadline:
            if subprocess.call(docker(i, 'info'), stdout=null, stderr=subprocess.STDOUT) == 0:
                return
            time.sleep(0.5)
    raise RuntimeError('dockerd of %s did not answer within %d s (log: %s/dockerd.log)'
                       % (ns, timeout, run))


def init_manager():
    """A swarm on the host's engine, advertising the host end of node 1's veth."""
    sh(['docker', 'swarm', 'init', '--advertise-addr', host_addr(1),
        '--listen-addr', host_addr(1) + ':2377'])
    return sh(['docker', 'swarm', 'join-token', '-q', 'worker']).strip()


def join(i, token):
    sh(docker(i, 'swarm', 'join', '--token', token, '--advertise-addr', node_addr(i),
              '--listen-addr', node_addr(i) + ':2377', host_addr(1) + ':2377'), timeout=60)


def label_nodes(n):
    """Label every node with its name (host, gldmh1, ...), found by its address."""
    want = dict((node_addr(i), name(i)) for i in range(1, n))
    deadline = time.time() + 60
    while True:
        ids = sh(['docker', 'node', 'ls', '-q']).split()
        addrs = {}
        for node_id in ids:
            a = sh(['docker', 'node', 'inspect', node_id, '--format',
                    '{{.Status.Addr}} {{.Status.State}}']).split()
            if len(a) == 2 and a[1] == 'ready':
                addrs[node_id] = a[0]
        if len(addrs) == n:
            break
        if time.time() > deadline:
            raise RuntimeError('%d of %d nodes ready after 60 s' % (len(addrs), n))
        time.sleep(0.5)
    for node_id, addr in addrs.items():
        # The manager's own address reads 127.0.0.1 or its advertised one, by version.
        label = want.get(addr, 'host')
        # gloaddriver=load is what the job's placement asks for (as on real hosts);
        # gloaddriver.node names the node in the report.
        sh(['docker', 'node', 'update', '--label-add', 'gloaddriver=load',
            '--label-add', '%s=%s' % (LABEL, label), node_id])


def load_image(image, n):
    """The image on every extra node: one docker save, n-1 loads side by side."""
    fd, path = tempfile.mkstemp(prefix=IMAGE_FILE, suffix='.tar')
    os.close(fd)
    try:
        sh(['docker', 'save', '-o', path, image])
        errors = []

        def load(i):
            try:
                sh(docker(i, 'load', '-q', '-i', path), timeout=300)
            except Exception as e:   # reported below, by node
                errors.append('%s: %s' % (name(i), e))
        threads = [threading.Thread(target=load, args=(i,)) for i in range(1, n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError('image load failed: ' + '; '.join(errors))
    finally:
        os.unlink(path)


def up(n, image):
    """Nodes 1..n-1 made, started, joined, labelled, with the image; times in a dict."""
    times = {}
    check_free(n)
    t0 = time.time()
    for i in range(1, n):
        make_namespace(i)
    threads, errors = [], []

    def start(i):
        try:
            start_engine(i)
        except Exception as e:
            errors.append(str(e))
    for i in range(1, n):
        threads.append(threading.Thread(target=start, args=(i,)))
        threads[-1].start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError('; '.join(errors))
    times['engines'] = time.time() - t0
    t0 = time.time()
    token = init_manager()
    for i in range(1, n):
        join(i, token)
    label_nodes(n)
    times['swarm'] = time.time() - t0
    t0 = time.time()
    load_image(image, n)
    times['image'] = time.time() - t0
    return times


# -- cleanup: by the marks, whatever state an earlier run left -------------------------

def _ours_swarm():
    """True when the host's engine is in a swarm this module made (10.213.* address)."""
    out = sh(['docker', 'info', '--format', '{{.Swarm.LocalNodeState}} {{.Swarm.NodeAddr}}'],
             check=False, quiet=True).split()
    return len(out) == 2 and out[0] == 'active' and out[1].startswith(NET + '.')


def _engine_pids():
    """dockerd processes started here: their command line names RUN (found through
    /proc, so a run whose pid file is gone still finds them)."""
    pids = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as f:
                argv = f.read().decode('utf-8', 'replace').split('\0')
        except (IOError, OSError):
            continue
        if argv and os.path.basename(argv[0]) == 'dockerd' and any(
                a.startswith(RUN + '/') for a in argv):
            pids.append(int(entry))
    return pids


def _signal(pid, sig):
    """The engine's whole process group (its containerd too: started with setsid, the
    engine leads its group; a dockerd signalled alone waits ~40 s on its containerd)."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except OSError:
        pass


def _alive(pid):
    """Running (an engine this process started is reaped here, not left a zombie)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except OSError:   # not our child: started by an earlier run
        pass
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (IOError, OSError, IndexError):
        return False


def _stop(pids, timeout=30):
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.time() + timeout
    while pids and time.time() < deadline:
        pids = [p for p in pids if _alive(p)]
        time.sleep(0.2)
    for pid in pids:
        _signal(pid, signal.SIGKILL)


def _unmount_under(*roots):
    with open('/proc/mounts') as f:
        points = [l.split()[1] for l in f]
    for p in reversed(points):
        if any(p == r or p.startswith(r + '/') for r in roots):
            subprocess.call(['umount', '-l', p])


def cleanup(service=None):
    """Remove the job, the extra engines, their roots, namespaces, links, and the
    host's swarm when this module made it. Never raises: each step on its own."""
    steps = []
    if service:
        steps.append(lambda: sh(['docker', 'service', 'rm', service], check=False, quiet=True))
    if os.path.isdir(RUN):
        for d in sorted(os.listdir(RUN)):
            if d.startswith(PREFIX) and os.path.exists(os.path.join(RUN, d, 'docker.sock')):
                steps.append(lambda d=d: sh(['docker', '-H', 'unix://%s/%s/docker.sock' % (RUN, d),
                                             'swarm', 'leave', '--force'], check=False,
                                            timeout=20, quiet=True))
    steps.append(lambda: _stop(_engine_pids()))
    steps.append(lambda: _ours_swarm() and sh(['docker', 'swarm', 'leave', '--force'],
                                              check=False, timeout=60))
    steps.append(lambda: _unmount_under(RUN, DATA))
    steps.append(lambda: shutil.rmtree(RUN, ignore_errors=True))
    steps.append(lambda: shutil.rmtree(DATA, ignore_errors=True))
    steps.append(_remove_namespaces)
    steps.append(_remove_image_files)
    for step in steps:
        try:
            step()
        except Exception as e:   # go on: the other marks still get removed
            say('cleanup step failed: %s' % e)


def _image_files():
    tmp = tempfile.gettempdir()
    return [os.path.join(tmp, f) for f in os.listdir(tmp) if f.startswith(IMAGE_FILE)]


def _remove_image_files():
    """The saved image of a run that died while loading it (some 190 MB)."""
    for path in _image_files():
        os.unlink(path)


def _remove_namespaces():
    for line in sh(['ip', 'netns', 'list'], check=False).splitlines():
        ns = line.split()[0] if line.split() else ''
        if ns.startswith(PREFIX):
            sh(['ip', 'netns', 'del', ns], check=False)
    for line in sh(['ip', '-o', 'link', 'show'], check=False).splitlines():
        parts = line.split(':')
        link = parts[1].strip().split('@')[0] if len(parts) > 1 else ''
        if link.startswith(PREFIX):   # (gone already when its namespace took the pair)
            sh(['ip', 'link', 'del', link], check=False, quiet=True)


def leftovers():
    """What of ours is still on this machine (empty when clean): for the tests."""
    found = []
    for line in sh(['ip', 'netns', 'list'], check=False).splitlines():
        if line.startswith(PREFIX):
            found.append('netns ' + line.split()[0])
    for line in sh(['ip', '-o', 'link', 'show'], check=False).splitlines():
        parts = line.split(':')
        if len(parts) > 1 and parts[1].strip().startswith(PREFIX):
            found.append('link ' + parts[1].strip())
    found += ['dockerd pid %d' % p for p in _engine_pids()]
    found += [d for d in (RUN, DATA) if os.path.exists(d)] + _image_files()
    if _ours_swarm():
        found.append('swarm on %s.*' % NET)
    return found


def main(argv):
    """scripts/swarm_nodes.py cleanup|leftovers (what scripts/many-hosts and tests call)."""
    if argv[1:] == ['cleanup']:
        cleanup()
        return 0
    if argv[1:] == ['leftovers']:
        found = leftovers()
        print(json.dumps(found))
        return 1 if found else 0
    print('usage: swarm_nodes.py cleanup|leftovers', file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
