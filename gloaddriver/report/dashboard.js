/* gloaddriver dashboard: draws the view that report/dashboard.py made (embedded in the
   page as JSON) with uPlot. On the --web page it also listens to the run's server-sent
   events: a "row" each interval, then "final" with the view of the finished run.
   Nothing here decides what a figure means; it only draws. */
(function () {
  'use strict';
  var COLORS = ['#1f77b4', '#2ca02c', '#d62728', '#ff7f0e', '#9467bd', '#8c564b',
                '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
  var view = JSON.parse(document.getElementById('gl-data').textContent);
  var app = document.getElementById('app');
  var plots = {};          // chart id -> {u, key}
  var flameCharts = [];    // the page's flame graphs, drawn after the sections
  var pending = false;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }
  function num(v) {
    if (v === null || v === undefined || isNaN(v)) { return '-'; }
    var a = Math.abs(v);
    if (a >= 1e9) { return (v / 1e9).toPrecision(3) + 'G'; }
    if (a >= 1e6) { return (v / 1e6).toPrecision(3) + 'M'; }
    if (a >= 1e4) { return (v / 1e3).toPrecision(3) + 'k'; }
    if (a >= 100 || v === Math.round(v)) { return String(Math.round(v)); }
    return v.toPrecision(3);
  }
  function perSec(n, s) { return s > 0 && n !== undefined && n !== null ? n / s : null; }
  function positive(v) { return v !== null && v !== undefined && v > 0 ? v : null; }

  // -- the verdict, the table, the phases' notes ---------------------------------------

  function banner() {
    var box = el('div');
    box.id = 'verdict';
    var v = view.verdict;
    if (!v) {
      box.className = 'live';
      box.appendChild(el('p', 'code', 'running'));
      var p = el('p', null, '');
      p.id = 'live-status';
      p.textContent = liveStatus();
      box.appendChild(p);
      return box;
    }
    var failed = v.code !== 0;
    // Exit 0 with an outage or errors (a --fail-if that did not gate on them): amber.
    var warned = v.items.some(function (i) { return i.level === 'warn' || i.level === 'bad'; });
    box.className = failed ? 'bad' : (warned ? 'warn' : 'ok');
    box.setAttribute('data-exit', v.code);
    box.appendChild(el('p', 'code', 'exit ' + v.code + ': ' +
                       (failed ? (v.code === 4 ? 'FAILED' : v.code === 130 ? 'INTERRUPTED'
                                  : 'FAILED') : 'passed') + ' \u2014 ' + v.why));
    if (v.items.length) {
      var ul = el('ul');
      v.items.forEach(function (i) { ul.appendChild(el('li', i.level, i.t)); });
      box.appendChild(ul);
    }
    return box;
  }

  function liveStatus() {
    var n = 0, last = null;
    view.phases.forEach(function (p) {
      p.rows.forEach(function (r) { n += r.attempted; });
      if (p.rows.length) { last = p; }
    });
    if (!last) { return 'waiting for the first interval'; }
    var r = last.rows[last.rows.length - 1];
    return 'phase ' + last.name + ', ' + r.t.toFixed(1) + ' s: ' + num(perSec(r.attempted, r.seconds)) +
      ' ops/s now; attempted so far: ' + n;
  }

  function table() {
    if (!view.columns.length) { return null; }
    var wrap = el('div', 'scroll');
    var t = el('table', 'summary');
    var tr = el('tr');
    view.columns.forEach(function (c) { tr.appendChild(el('th', null, c)); });
    t.appendChild(tr);
    view.table.forEach(function (row) {
      var r = el('tr', row[0] ? 'op' : 'phase');
      row[1].forEach(function (c, i) {
        r.appendChild(el('td', null, i === 0 && row[0] ? '\u2003' + c : c));
      });
      t.appendChild(r);
    });
    wrap.appendChild(t);
    return wrap;
  }

  // -- charts -----------------------------------------------------------------------

  // A value with gaps on both sides draws no line: it gets a dot (and only it does).
  function lonely(values, n) {
    if (n < 3) { return {show: true}; }
    var idx = [];
    values.forEach(function (v, i) {
      if (v !== null && v !== undefined && (i === 0 || values[i - 1] === null) &&
          (i === n - 1 || values[i + 1] === null)) { idx.push(i); }
    });
    return idx.length ? {show: true, size: 5, filter: idx} : {show: false};
  }

  // A mark's label beside its line, on the lowest line of text where it meets no label
  // drawn before: marks a second apart (a kill-leader, then its promote) would print over
  // each other. Left of the line when it would run past the plot's right edge. Returns
  // the box drawn, {text, x, y, w, h} in canvas pixels.
  function placeLabel(ctx, text, x, b, dpr, placed) {
    var w = ctx.measureText(text).width, lineH = 13 * dpr;
    var left = x + 3 * dpr;
    if (left + w > b.left + b.width && x - 3 * dpr - w >= b.left) { left = x - 3 * dpr - w; }
    for (var level = 0; ; level++) {
      var y = b.top + b.height - 6 * dpr - level * lineH;
      var clash = placed.some(function (o) {
        return o.y === y && left < o.x + o.w + 4 * dpr && o.x < left + w + 4 * dpr;
      });
      if (!clash || y - lineH < b.top) {
        ctx.fillText(text, left, y);
        return {text: text, x: left, y: y, w: w, h: lineH};
      }
    }
  }

  // Phase bands (alternating shade, name on top), outages (red) and marks (dashed lines).
  function eventsPlugin(withPhases) {
    function draw(u) {
      var ctx = u.ctx, b = u.bbox, top = b.top, h = b.height;
      var dpr = window.devicePixelRatio || 1;
      var placed = [];
      ctx.save();
      ctx.font = (11 * dpr) + 'px system-ui,sans-serif';
      view.phases.forEach(function (p, i) {
        var end = p.offset + (p.rows.length ? p.rows[p.rows.length - 1].t : (p.seconds || 0));
        var x0 = u.valToPos(p.offset, 'x', true), x1 = u.valToPos(end, 'x', true);
        if (withPhases && view.phases.length > 1) {
          if (i % 2) {
            ctx.fillStyle = 'rgba(0,0,0,0.035)';
            ctx.fillRect(x0, top, x1 - x0, h);
          }
          ctx.fillStyle = '#666';
          ctx.fillText(p.name, Math.max(x0, b.left) + 4 * dpr, top + 12 * dpr);
        }
        p.bands.forEach(function (o) {
          var a = u.valToPos(p.offset + o.start, 'x', true);
          var z = u.valToPos(p.offset + o.end, 'x', true);
          ctx.fillStyle = 'rgba(214,39,40,0.13)';
          ctx.fillRect(a, top, Math.max(z - a, 2 * dpr), h);
          ctx.fillStyle = '#b00020';
          ctx.fillText(o.label, a + 3 * dpr, top + 26 * dpr);
        });
        p.marks.forEach(function (m) {
          var x = u.valToPos(p.offset + m.t, 'x', true);
          ctx.strokeStyle = m.kind === 'fault' ? '#b00020' : '#555';
          ctx.setLineDash([4 * dpr, 3 * dpr]);
          ctx.lineWidth = dpr;
          ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
          ctx.fillStyle = ctx.strokeStyle;
          placed.push(placeLabel(ctx, m.label, x, b, dpr, placed));
        });
      });
      u.markLabels = placed;
      ctx.restore();
    }
    return {hooks: {drawClear: [draw]}};
  }

  function chartWidth(fig) {
    return Math.max(300, fig.clientWidth - 18);
  }

  // spec: {id, title, x, series: [{label, values, dash, scale, width}], log, unit,
  //        right: {label} (a second y axis, scale 'r'), xLabel, xValues, xSplits, phases}
  function chart(grid, spec) {
    if (!spec.series.length || !spec.x.length) { return; }
    var fig = el('figure', 'chart');
    fig.setAttribute('data-chart', spec.id);
    fig.appendChild(el('figcaption', null, spec.title));
    grid.appendChild(fig);
    var yScale = {distr: spec.log ? 3 : 1, log: 10};
    if (!spec.log) { yScale.range = function (u, lo, hi) { return [Math.min(0, lo), hi > 0 ? hi * 1.05 : 1]; }; }
    var scales = {x: {time: false}, y: yScale};
    if (!spec.xLabel) {   // over time: from the run's start, not its first row
      scales.x.range = function (u, lo, hi) { return [0, hi > 0 ? hi : 1]; };
    }
    var axes = [{label: spec.xLabel || 'seconds into the run', labelSize: 18, size: 36},
                {scale: 'y', label: spec.unit, labelSize: 18, size: 56,
                 values: function (u, vals) { return vals.map(num); }}];
    if (spec.xValues) {
      axes[0].values = spec.xValues;
      axes[0].splits = spec.xSplits;
    }
    if (spec.right) {
      scales.r = {range: function (u, lo, hi) { return [0, hi > 0 ? hi * 1.1 : 1]; }};
      axes.push({scale: 'r', side: 1, label: spec.right.label, labelSize: 18, size: 56,
                 grid: {show: false}, stroke: COLORS[2],
                 values: function (u, vals) { return vals.map(num); }});
    }
    var series = [{label: spec.xLabel || 't (s)',
                   value: function (u, v) { return v === null || v === undefined ? '-' : (spec.xLegend ? spec.xLegend(v) : v.toFixed(2)); }}];
    var data = [spec.x];
    spec.series.forEach(function (s, i) {
      series.push({label: s.label, stroke: s.color || COLORS[i % COLORS.length],
                   width: s.width || 1.5, dash: s.dash ? [6, 4] : undefined,
                   scale: s.scale || 'y', spanGaps: false,
                   points: lonely(s.values, spec.x.length),
                   value: function (u, v) { return num(v); }});
      data.push(s.values);
    });
    var opts = {width: chartWidth(fig), height: spec.height || 250, scales: scales, axes: axes,
                series: series, legend: {live: true},
                cursor: {drag: {x: true, y: false}},
                plugins: spec.phases === false ? [] : [eventsPlugin(true)]};
    var u = new uPlot(opts, data, fig);
    u.root.setAttribute('data-points', spec.x.length);
    plots[spec.id] = {u: u, fig: fig};
  }

  // --find-max: latency against achieved throughput, a point per step (the hockey stick),
  // the objective's limits as flat lines, the knee as a dot of its own.
  function findMaxChart() {
    var f = view.find_max;
    app.appendChild(el('h2', null, 'Find the knee: latency against throughput, a point per step'));
    app.appendChild(el('p', 'sub', f.finding));
    var grid = el('div', 'grid');
    app.appendChild(grid);
    var s = [['p50', 'p50'], ['p90', 'p90'], ['p99', 'p99'], ['p999', 'p99.9']].map(function (k, i) {
      return {label: k[1] + ' ms', values: f.latency_ms[k[0]], color: COLORS[i]};
    });
    f.objective.forEach(function (o) {
      s.push({label: o.label, values: f.x.map(function () { return o.ms; }), dash: true, color: '#555'});
    });
    if (f.knee !== null) {
      s.push({label: 'knee', width: 0, color: COLORS[2],
              values: f.x.map(function (x, i) { return i === f.knee ? f.latency_ms.p99[i] : null; })});
    }
    chart(grid, {id: 'find-max', title: 'Latency (from the intended start) against achieved ops/s; ' +
                 'each step judged on its own window', x: f.x, series: s, log: true, unit: 'ms',
                 xLabel: 'achieved ops/s', phases: false,
                 xLegend: function (v) { return num(v) + ' ops/s'; }});
    var fig = grid.lastChild;
    if (fig && f.knee !== null) { fig.setAttribute('data-knee', f.x[f.knee]); }
  }

  // The rows of every phase on one axis: seconds from the first phase's start.
  function timeline() {
    var x = [], rows = [], phaseOf = [];
    view.phases.forEach(function (p) {
      p.rows.forEach(function (r) { x.push(+(p.offset + r.t).toFixed(4)); rows.push(r); phaseOf.push(p); });
    });
    return {x: x, rows: rows, phaseOf: phaseOf};
  }

  function col(rows, f) { return rows.map(function (r) { var v = f(r); return v === undefined ? null : v; }); }
  function has(rows, f) { return rows.some(function (r) { var v = f(r); return v !== null && v !== undefined; }); }

  function timelineCharts(grid) {
    var tl = timeline(), rows = tl.rows, x = tl.x;
    if (!rows.length) { grid.appendChild(el('p', 'empty', 'no interval closed yet')); return; }
    var s = [
      {label: 'attempted/s', values: col(rows, function (r) { return perSec(r.attempted, r.seconds); }), width: 2.5},
      {label: 'ok/s', values: col(rows, function (r) { return perSec(r.ok, r.seconds); }), dash: true, color: COLORS[1]},
      {label: 'errors/s (right axis)', values: col(rows, function (r) { return perSec(r.errors, r.seconds); }), scale: 'r', color: COLORS[2]}];
    if (has(rows, function (r) { return r.target_ops; })) {
      s.push({label: 'target ops/s', values: col(rows, function (r) { return r.target_ops; }), dash: true, color: '#555'});
    }
    chart(grid, {id: 'throughput', title: 'Throughput: attempted, ok and errors per second',
                 x: x, series: s, unit: 'ops/s', right: {label: 'errors/s'}});

    var lat = [['p50', 'p50'], ['p90', 'p90'], ['p95', 'p95'], ['p99', 'p99'], ['p999', 'p99.9'], ['max', 'max']];
    var ls = [];
    lat.forEach(function (k) {
      if (has(rows, function (r) { return (r.latency_us || {})[k[0]]; })) {
        ls.push({label: k[1], values: col(rows, function (r) { return positive((r.latency_us || {})[k[0]]); })});
      }
    });
    if (has(rows, function (r) { return (r.service_time_us || {}).p99; })) {
      ls.push({label: 'service p99', dash: true,
               values: col(rows, function (r) { return positive((r.service_time_us || {}).p99); })});
    }
    var open = view.phases.some(function (p) { return p.open_loop; });
    chart(grid, {id: 'latency', title: 'Latency percentiles over time' + (open ? ' (from the intended start)' : ''),
                 x: x, series: ls, unit: 'microseconds (log)', log: true});

    var cs = [];
    if (has(rows, function (r) { return r.in_flight; })) {
      cs.push({label: 'ops in flight', values: col(rows, function (r) { return r.in_flight; })});
    }
    if (has(rows, function (r) { return r.active; })) {
      cs.push({label: 'active greenlets', values: col(rows, function (r) { return r.active; })});
    }
    if (has(rows, function (r) { return r.target_greenlets; })) {
      cs.push({label: 'target greenlets', dash: true, color: '#555',
               values: col(rows, function (r) { return r.target_greenlets; })});
    }
    chart(grid, {id: 'concurrency', title: 'Concurrency: ops in flight at each interval\'s end',
                 x: x, series: cs, unit: 'ops / greenlets'});

    var names = [];
    rows.forEach(function (r) { Object.keys(r.by_op || {}).forEach(function (n) { if (names.indexOf(n) < 0) { names.push(n); } }); });
    names.sort();
    if (names.length) {
      chart(grid, {id: 'op-throughput', title: 'Throughput by op (ok/s)', x: x, unit: 'ops/s',
                   series: names.map(function (n) {
                     return {label: n, values: col(rows, function (r) { var b = (r.by_op || {})[n]; return b ? perSec(b.ok, r.seconds) : null; })};
                   })});
      var withLat = names.filter(function (n) { return has(rows, function (r) { return ((r.by_op || {})[n] || {}).latency_us; }); });
      if (withLat.length) {
        var ps = [];
        withLat.forEach(function (n) {
          ps.push({label: n + ' p99', values: col(rows, function (r) { var b = (r.by_op || {})[n]; return b && b.latency_us ? positive(b.latency_us.p99) : null; })});
        });
        withLat.forEach(function (n, i) {
          ps.push({label: n + ' p50', dash: true, color: COLORS[i % COLORS.length],
                   values: col(rows, function (r) { var b = (r.by_op || {})[n]; return b && b.latency_us ? positive(b.latency_us.p50) : null; })});
        });
        chart(grid, {id: 'op-latency', title: 'Latency by op: p99 (solid), p50 (dashed)', x: x,
                     series: ps, unit: 'microseconds (log)', log: true});
      }
    }
    if (has(rows, function (r) { return r.syscalls; })) {
      chart(grid, {id: 'syscalls-over-time', title: 'Syscalls per op over time', x: x, unit: 'syscalls per op',
                   series: [{label: 'syscalls/op', values: col(rows, function (r) { return r.syscalls !== null && r.attempted ? r.syscalls / r.attempted : null; })}]});
    }
    serverCharts(grid);
  }

  function serverCharts(grid) {
    var x = [], rows = [];
    view.phases.forEach(function (p) {
      (p.server || []).forEach(function (d) { x.push(+(p.offset + d.t).toFixed(4)); rows.push(d); });
    });
    if (!rows.length) { return; }
    var kinds = [];
    rows.forEach(function (d) {
      Object.keys(d.rps || {}).forEach(function (k) { if (d.rps[k] && kinds.indexOf(k) < 0) { kinds.push(k); } });
    });
    kinds.sort();
    // An interval the server did not answer (down, or late) has no sample: a gap in its
    // lines, never a line drawn across it (a killed server joined to its next sample
    // would seem to serve all along). In a sampled row a type not there is 0 requests.
    function sampled(f) { return function (d) { return d.late ? null : f(d); }; }
    function perSecond(k, label) {
      return {label: label, values: col(rows, sampled(function (d) { return (d.rps || {})[k] || 0; }))};
    }
    function client() {
      return {label: 'client ops/s', dash: true, color: '#555', values: col(rows, function (d) { return d.client_ops_per_sec; })};
    }
    // A replica set's members (requests@HOST:PORT) on a chart of their own: the types'
    // chart follows the leader, and reads sent to a replica (--read-from) show there.
    var members = kinds.filter(function (k) { return k.indexOf('requests@') === 0; });
    var s = kinds.filter(function (k) { return members.indexOf(k) < 0; }).map(function (k) { return perSecond(k, k + '/s'); });
    s.push(client());
    chart(grid, {id: 'server-rps', title: members.length ? 'Leader: requests per second by type' : 'Server: requests per second by type',
                 x: x, series: s, unit: 'per second'});
    if (members.length) {
      s = members.map(function (k) { return perSecond(k, k.slice('requests@'.length) + ' req/s'); });
      s.push(client());
      chart(grid, {id: 'member-rps', title: 'Replica set: requests per second by member', x: x, series: s, unit: 'per second'});
    }
    var groups = view.server_charts || [];
    view.phases.forEach(function (p) { if (p.server_charts && p.server_charts.length) { groups = p.server_charts; } });
    groups.forEach(function (g) {
      var keys = g.keys.filter(function (k) { return has(rows, function (d) { return d[k]; }); });
      if (keys.length) {
        chart(grid, {id: g.kind, title: g.title, x: x, unit: g.unit,
                     series: keys.map(function (k) { return {label: k, values: col(rows, sampled(function (d) { return k in d ? d[k] : null; }))}; })});
      }
    });
  }

  function phaseSection(p) {
    var sec = el('section', 'phase');
    sec.setAttribute('data-phase', p.name);
    sec.appendChild(el('h2', null, 'Phase ' + p.name));
    (p.notes || []).forEach(function (n) { sec.appendChild(el('p', n.level === 'bad' ? 'bad' : null, n.text)); });
    if (p.statements) {   // --per-statement: pgbench -r's figures, a row per script line
      var wrap = el('div', 'scroll');
      var st = el('table', 'statements');
      st.setAttribute('data-table', 'statements-' + p.name);
      var head = el('tr');
      p.statements.columns.forEach(function (c) { head.appendChild(el('th', null, c)); });
      st.appendChild(head);
      p.statements.rows.forEach(function (row) {
        var tr = el('tr');
        row.forEach(function (c) { tr.appendChild(el('td', null, c)); });
        st.appendChild(tr);
      });
      wrap.appendChild(el('p', null, 'Per statement (latency in milliseconds)'));
      wrap.appendChild(st);
      sec.appendChild(wrap);
    }
    var grid = el('div', 'grid');
    sec.appendChild(grid);
    var sp = p.spectra;
    if (sp) {
      chart(grid, {id: 'distribution-' + p.name, title: 'Latency distribution by op' + (p.open_loop ? ' (from the intended start)' : ''),
                   x: sp.x, unit: 'microseconds (log)', log: true, phases: false, xLabel: 'percentile',
                   xSplits: function () { var out = []; for (var i = 0; i <= Math.floor(sp.x[sp.x.length - 1]); i++) { out.push(i); } return out; },
                   xValues: function (u, vals) { return vals.map(function (v) { return sp.labels[v] || ''; }); },
                   xLegend: function (v) { return (100 * (1 - Math.pow(10, -v))).toPrecision(6) + '%'; },
                   series: sp.series.map(function (s) { return {label: s.label, values: s.values.map(positive)}; })});
    }
    if (p.syscalls) {
      var fig = el('figure', 'chart');
      fig.setAttribute('data-chart', 'syscalls-' + p.name);
      fig.appendChild(el('figcaption', null, 'Syscalls per op: ' + num(p.syscalls_per_op) + ' in all (' + p.syscall_source + ')'));
      var t = el('table');
      var max = Math.max.apply(null, p.syscalls.map(function (kv) { return kv[1]; }));
      p.syscalls.forEach(function (kv) {
        var tr = el('tr');
        tr.appendChild(el('td', null, kv[0]));
        tr.appendChild(el('td', null, kv[1].toFixed(3)));
        var bar = el('td');
        var b = el('div');
        b.style.background = COLORS[0];
        b.style.height = '10px';
        b.style.width = Math.round(300 * kv[1] / (max || 1)) + 'px';
        bar.appendChild(b);
        tr.appendChild(bar);
        t.appendChild(tr);
      });
      fig.appendChild(t);
      grid.appendChild(fig);
    }
    if (p.flamegraphs) { sec.appendChild(flameGraphs(p)); }
    return sec;
  }

  // -- flame graphs (d3-flame-graph, in the page only when the view has one) ------------

  function pct(n, total) { return total ? (100 * n / total).toFixed(2) + '%' : '-'; }

  // The phase's client and server graphs side by side: click a frame to zoom on it
  // (click the root, or "reset zoom", to zoom out), type in the search box to
  // highlight the frames whose name has the text; hover names a frame's samples.
  function flameGraphs(p) {
    var box = el('div', 'flames');
    if (!window.flamegraph || !window.d3) {   // a live page whose run had none planned
      box.appendChild(el('p', 'empty', 'flame graphs: reload this page while the driver ' +
                         'serves it, or open the run\'s --html file'));
      return box;
    }
    p.flamegraphs.forEach(function (g) {
      var fig = el('figure', 'chart flame');
      fig.setAttribute('data-flame', g.side);
      fig.appendChild(el('figcaption', null, (g.side === 'client' ? 'Client CPU' : 'Server CPU') +
                         ' (' + g.sampler + ', ' + g.rate + ' Hz): ' + num(g.samples) + ' samples' +
                         (g.against_samples ? '; against ' + (view.against || 'the first file') +
                          ' (' + num(g.against_samples) + ' samples): red, more of the ' +
                          'samples than there; blue, fewer' : '')));
      if (g.against_samples) { fig.setAttribute('data-differential', 'true'); }
      var bar = el('div', 'flame-bar');
      var search = el('input');
      search.type = 'search';
      search.placeholder = 'search frames';
      var reset = el('button', null, 'reset zoom');
      var found = el('span', 'flame-found');
      bar.appendChild(search); bar.appendChild(reset); bar.appendChild(found);
      fig.appendChild(bar);
      var hover = el('div', 'flame-hover', '\u00a0');
      fig.appendChild(hover);
      var holder = el('div', 'flame-graph');
      fig.appendChild(holder);
      box.appendChild(fig);
      flameCharts.push({fig: fig, holder: holder, g: g, hover: hover, search: search,
                        found: found, reset: reset});
    });
    return box;
  }

  // Drawn once the section is in the document, so that the figures have a width.
  function drawFlames() {
    var make = window.flamegraph && (window.flamegraph['default'] || window.flamegraph);
    flameCharts.forEach(function (f) {
      var total = f.g.samples || f.g.tree.value;
      var label = function (d) {
        return d.data.name + ': ' + d.data.value + ' samples, ' + pct(d.data.value, total) +
          ' of the phase\'s' + (d.data.delta === undefined ? '' : ', ' +
          (d.data.delta >= 0 ? '+' : '') + d.data.delta + ' against the other run\'s share');
      };
      var chart = make().width(Math.max(300, f.holder.clientWidth)).cellHeight(18)
        .minFrameSize(1).transitionDuration(300).sort(false)
        .setLabelHandler(label)
        .setDetailsHandler(function (text) { f.hover.textContent = text || '\u00a0'; })
        // the search box's text as it is typed (not a regular expression), any case
        .setSearchMatch(function (d, term) {
          return !!term && d.data.name.toLowerCase().indexOf(term.toLowerCase()) >= 0;
        })
        .setSearchHandler(function (results, sum) {
          f.found.textContent = f.search.value ? results.length +
            (results.length === 1 ? ' frame, ' : ' frames, ') + sum +
            ' samples (' + pct(sum, total) + ')' : '';
        });
      if (f.g.against_samples) {   // differential: colour by each frame's delta
        chart.setColorMapper(window.flamegraph.colorMapper.differentialColorMapper);
      }
      window.d3.select(f.holder).datum(f.g.tree).call(chart);
      f.search.addEventListener('input', function () {
        if (f.search.value) { chart.search(f.search.value); } else { chart.clear(); f.found.textContent = ''; }
      });
      f.reset.addEventListener('click', function () { chart.resetZoom(); });
      f.chart = chart;
    });
  }

  function render() {
    pending = false;
    Object.keys(plots).forEach(function (k) { plots[k].u.destroy(); });
    plots = {};
    flameCharts = [];
    var scrollY = window.scrollY;
    app.textContent = '';
    document.title = view.title;
    app.appendChild(el('h1', null, 'gloaddriver report'));
    app.appendChild(el('p', 'sub', view.headline + (view.started ? ' \u2014 ' + view.started : '') +
                       (view.merged_from ? '; merged from ' + view.merged_from + ' parts' : '')));
    app.appendChild(banner());
    var t = table();
    if (t) { app.appendChild(t); }
    app.appendChild(el('h2', null, 'The whole run' + (view.phases.length > 1 ? ' (phases shaded in turn)' : '') +
                       ': drag to zoom, double-click to reset, click a legend entry to hide it'));
    var grid = el('div', 'grid');
    app.appendChild(grid);
    timelineCharts(grid);
    if (view.find_max) { findMaxChart(); }
    view.phases.forEach(function (p) { if (view.final) { app.appendChild(phaseSection(p)); } });
    drawFlames();
    if (view.manifest) {
      app.appendChild(el('h2', null, 'Manifest'));
      var d = el('details');
      d.appendChild(el('summary', null, 'what ran, where, with which versions'));
      d.appendChild(el('pre', null, view.manifest));
      app.appendChild(d);
    }
    window.scrollTo(0, scrollY);
    app.setAttribute('data-rendered', String(+new Date()));
  }

  function later() {
    if (!pending) { pending = true; window.requestAnimationFrame(render); }
  }

  window.addEventListener('resize', function () {
    Object.keys(plots).forEach(function (k) {
      var p = plots[k];
      p.u.setSize({width: chartWidth(p.fig), height: p.u.height});
    });
  });

  // -- live -------------------------------------------------------------------------

  function onRow(msg) {
    var phases = view.phases, p = phases[phases.length - 1];
    if (!p || p.name !== msg.phase || (p.rows.length && msg.row.t < p.rows[p.rows.length - 1].t)) {
      var offset = p ? p.offset + (p.rows.length ? p.rows[p.rows.length - 1].t : 0) : 0;
      p = {name: msg.phase, offset: offset, rows: [], server: [], bands: [], marks: [], notes: []};
      phases.push(p);
    }
    p.rows.push(msg.row);
    if (msg.server) { p.server.push(msg.server); }
    var status = document.getElementById('live-status');
    if (status) { status.textContent = liveStatus(); }
    later();
  }

  if (!view.final && window.EventSource) {
    var es = new EventSource('events');
    es.addEventListener('row', function (e) { onRow(JSON.parse(e.data)); });
    // --find-max: the curve so far, a point more after each step is judged.
    es.addEventListener('step', function (e) { view.find_max = JSON.parse(e.data); later(); });
    es.addEventListener('final', function (e) {
      es.close();
      view = JSON.parse(e.data);
      render();
    });
  }
  // For tests and the curious: what each chart holds and how much of it is drawn.
  function inked(canvas) {
    var d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data, n = 0;
    for (var i = 3; i < d.length; i += 4) { if (d[i]) { n++; } }
    return n;
  }
  window.gloaddriverView = function () { return view; };
  window.gloaddriverCharts = function () {
    return Object.keys(plots).map(function (id) {
      var u = plots[id].u, sec = plots[id].fig.closest('section');
      return {id: id, phase: sec ? sec.getAttribute('data-phase') : null,
              width: u.width, height: u.height, points: u.data[0].length,
              inked: inked(u.ctx.canvas), markLabels: u.markLabels || [],
              series: u.series.slice(1).map(function (s, i) {
                return {label: s.label, dash: !!s.dash, values: u.data[i + 1].filter(function (v) {
                  return v !== null && v !== undefined; }).length, joined: !!s.spanGaps,
                  gaps: u.data[i + 1].filter(function (v) { return v === null; }).length};
              })};
    });
  };
  render();
}());
