"""--find-max: the highest arrival rate the server sustains within an objective (the knee).

The objective is a set of --fail-if conditions (config/fail_if.py parses them,
report/thresholds.py judges them). The search runs the run's searched phase (its last;
a load phase before it runs as usual) as a series of open-loop steps, each a phase of
its own at one target rate: an unrecorded warm-up at that rate, then a measured window
judged alone. It doubles the rate from --find-max-start until a step breaks the
objective (or halves it until one holds, when the first breaks), then bisects the
bracket [highest held, first broken] until it is narrower than --find-max-resolution.

A step the client could not keep is the client's limit, not the server's, and ends
the search without a knee (``classify``). Every step keeps its whole phase result
(marked ``step``), and ``describe()`` is the result's ``find_max``.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver.measure import client_bound
from gloaddriver.report import thresholds

GROWTH = 2.0          # the factor between steps until one breaks
MIN_RATE = 1.0        # ops/s: halving stops here
# A lagging or broken step whose greenlets were all busy is the client's concurrency
# limit when its mean service time stayed within this factor of the lowest of the steps
# before it: the server did not queue, the greenlets were too few. A server that
# saturates queues the ops, and its service time grows with the greenlets in flight.
SERVICE_GROWTH = 1.5
BUSY_SHARE = 0.8      # of --greenlets in flight on average (Little's law): all were busy

HELD, BROKE, CLIENT = 'held', 'broke', 'client'


def _holds(conditions, phase):
    verdicts = thresholds.evaluate(conditions, {'phases': [phase]})
    return all(v['held'] for v in verdicts), verdicts


def classify(conditions, phase, greenlets, baseline_service):
    """(HELD, BROKE or CLIENT, why, verdicts) of one step's phase result.

    CLIENT when the driver could not keep the schedule for reasons of its own: its CPU
    was saturated (the client-bound warning) while the step lagged or broke, or the step
    lagged or broke with every greenlet busy while the server's service time stayed near
    ``baseline_service``, the lowest of the steps before (too few greenlets for the
    rate). A step that held the objective and kept its rate is HELD whatever the
    client's CPU: its figures met the objective. One that held but fell behind its rate
    did not sustain it: BROKE."""
    held, verdicts = _holds(conditions, phase)
    rate = phase.get('rate') or {}
    target, achieved = rate.get('target') or 0, rate.get('achieved') or 0
    lag = target > 0 and achieved < client_bound.LAG_LIMIT * target
    if held and not lag:
        return HELD, '', verdicts
    kinds = [w['kind'] for w in phase.get('warnings') or ()]
    if 'client_cpu' in kinds:
        return CLIENT, 'the driver\'s CPU was saturated', verdicts
    service = (phase.get('service_time_us') or {}).get('mean')
    # Lagging or not: a loop a little short of greenlets keeps most of the rate, and the
    # latency from the intended start breaks the objective all the same.
    if service:
        in_flight = achieved * service / 1e6
        if in_flight >= BUSY_SHARE * greenlets and baseline_service and \
                service <= SERVICE_GROWTH * baseline_service:
            return CLIENT, ('all %d greenlets were busy at %.0f ops/s of %.0f while the '
                            'server\'s service time stayed at %.0f us'
                            % (greenlets, achieved, target, service)), verdicts
    if lag:
        return BROKE, 'the open loop fell behind (%.0f of %.0f ops/s)' % (achieved, target), \
            verdicts
    return BROKE, '; '.join('%s: %s' % (v['condition'], _value(v)) for v in verdicts
                            if not v['held']), verdicts


def _value(v):
    return '-' if v['value'] is None else '%.4g%s' % (v['value'], v.get('unit') or '')


class Search(object):
    """The search over one phase: ``run(the_run, index, spec)`` runs it in a runner.Run
    and appends each step's phase result to the run's phases. ``search(measure, say,
    told)`` is the search alone, for --processes, whose steps are the children's
    (run/processes.py): ``measure(rate)`` gives a step's phase result (None when the run
    was stopped), ``say`` a progress line, ``told`` hears the search so far after each
    step. A child only measures the steps it is told to: ``follow``."""

    def __init__(self, find_max, greenlets):
        self.cfg = find_max
        self.greenlets = greenlets
        self.steps = []
        self.outcome = None
        self.why = ''
        self.followed = False     # a child's: the steps were judged by its parent
        self._baseline = None
        self._measured = 0        # steps measured here

    def run(self, the_run, index, spec):
        measure = self._measure(the_run, index, spec)
        self.search(measure, the_run.say, the_run.hooks.searched)

    def follow(self, the_run, index, spec, orders):
        """In a child of --processes: each step at the rate ``orders.rate()`` gives (None:
        the search is over), its phase result sent back with ``orders.report``."""
        self.followed = True
        measure = self._measure(the_run, index, spec)
        while True:
            rate = orders.rate()
            phase = measure(rate) if rate is not None else None
            if phase is None:
                return
            orders.report(phase)

    def _measure(self, the_run, index, spec):
        keys = the_run.keys.phase(spec)   # one key stream across the steps: no insert repeats

        def measure(rate):
            """The warm-up, then the measured phase; None when the run was stopped
            (interrupted, the server gone)."""
            if self.cfg.warmup > 0:
                the_run.warm(spec, keys, rate, self.cfg.warmup)
            if the_run.aborted:
                return None
            phase = the_run.run_phase(index, spec, rate=rate, seconds=self.cfg.step,
                                      keys=keys)
            self._measured += 1
            phase['step'] = self._measured
            the_run.phases.append(phase)
            return None if the_run.aborted else phase
        return measure

    def search(self, measure, say, told):
        held = broke = None
        rate = self.cfg.start
        while True:
            phase = measure(rate)
            if phase is None:
                return
            verdict = self._judge(phase, rate, say, told)
            if verdict == CLIENT:
                return self._end(CLIENT)
            if verdict == HELD:
                held = rate
            else:
                broke = rate
            nxt = self._next(held, broke)
            if nxt is None:
                return self._end('knee' if held and broke else
                                 'no_knee' if held else 'never_held')
            rate = nxt

    def _next(self, held, broke):
        """The next rate to try, or None when the search is over."""
        if len(self.steps) >= self.cfg.max_steps:
            self.why = 'it reached its step limit, --find-max-steps %d' % self.cfg.max_steps
            return None
        if broke is None:
            return held * GROWTH
        if held is None:
            nxt = broke / GROWTH
            return nxt if nxt >= MIN_RATE else None
        if (broke - held) <= self.cfg.resolution * held:
            return None
        return round((held + broke) / 2.0, 1)

    def _judge(self, phase, rate, say, told):
        """A step's phase result classified, kept as a step, said and told."""
        service = (phase.get('service_time_us') or {}).get('mean')
        if self._baseline is None:
            self._baseline = service
        verdict, why, verdicts = classify(self.cfg.conditions, phase, self.greenlets,
                                          self._baseline)
        if verdict == HELD and service:
            self._baseline = min(self._baseline or service, service)
        self.steps.append(_summary(phase, verdict, why, verdicts))
        say('find-max: step %d at %s ops/s: %s%s' % (
            len(self.steps), _rate_text(rate), verdict, ' (%s)' % why if why else ''))
        told(self.describe(searching=True))
        return verdict

    def _end(self, outcome):
        self.outcome = outcome

    def describe(self, searching=False):
        """The result's ``find_max``: the objective, every step, the bracket, and the
        outcome: knee, no_knee (nothing broke within the step limit), never_held (the
        lowest rate tried broke), client (the client's limit) or stopped; searching
        while the search goes on (what its listeners are told after each step). None
        in a child of --processes: its parent judged the steps."""
        if self.followed:
            return None
        held = [s for s in self.steps if s['verdict'] == HELD]
        broke = [s for s in self.steps if s['verdict'] == BROKE]
        best = max(held, key=lambda s: s['target']) if held else None
        above = [s for s in broke if best is None or s['target'] > best['target']]
        first_broke = min(above, key=lambda s: s['target']) if above else None
        client = [s for s in self.steps if s['verdict'] == CLIENT]
        return {
            'objective': ','.join(c['text'] for c in self.cfg.conditions),
            'start': self.cfg.start, 'step_seconds': self.cfg.step,
            'warmup_seconds': self.cfg.warmup, 'resolution': self.cfg.resolution,
            'max_steps': self.cfg.max_steps,
            'outcome': 'searching' if searching else self.outcome or 'stopped',
            'why': client[0]['why'] if client else self.why,
            'held': _bracket(best), 'broke': _bracket(first_broke),
            'client_limit': _bracket(client[0]) if client else None,
            'steps': self.steps}


def _bracket(step):
    return None if step is None else {'step': step['step'], 'target': step['target'],
                                      'achieved': step['achieved']}


def _rate_text(rate):
    return '{:,.1f}'.format(rate).rstrip('0').rstrip('.')


def _summary(phase, verdict, why, verdicts):
    """One step's row: its rates, latencies, errors, client CPU, server figures, verdict."""
    rate = phase['rate']
    lat = phase['latency_us']
    sm = ((phase.get('server_metrics') or {}).get('phase') or {})
    client = phase.get('client') or {}
    return {'step': phase['step'], 'target': rate['target'], 'achieved': rate['achieved'],
            'seconds': phase.get('seconds'),
            'p50_us': lat.get('p50'), 'p90_us': lat.get('p90'), 'p99_us': lat.get('p99'),
            'p999_us': lat.get('p999'),
            'service_p99_us': (phase.get('service_time_us') or {}).get('p99'),
            'attempted': phase['attempted'], 'errors': phase['failed'] + phase['timed_out'],
            'late': rate.get('late'), 'client_cpu': client.get('cpu'),
            'client_busy': client.get('busy'), 'server_cpu_pct': sm.get('cpu_pct'),
            'verdict': verdict, 'why': why,
            'verdicts': [{'condition': v['condition'], 'value': v['value'], 'held': v['held'],
                          'limit': v.get('limit'), 'unit': v.get('unit', '')}
                         for v in verdicts]}
