/* gloaddriver trend: draws the view report/trend.py made (embedded as JSON) with uPlot:
   a chart per figure over the stored runs of one scenario, a line per phase, and each
   step change measure/steps.py found marked at the first run after it, with a dashed
   line and its change. Nothing here decides what a step is; it only draws. */
(function () {
  'use strict';
  var COLORS = ['#1f77b4', '#2ca02c', '#d62728', '#ff7f0e', '#9467bd', '#8c564b',
                '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
  var view = JSON.parse(document.getElementById('gl-data').textContent);
  var app = document.getElementById('app');
  var plots = [];

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }
  function num(v) {
    if (v === null || v === undefined || isNaN(v)) { return '-'; }
    var a = Math.abs(v);
    if (a >= 1e6) { return (v / 1e6).toPrecision(3) + 'M'; }
    if (a >= 1e4) { return (v / 1e3).toPrecision(3) + 'k'; }
    if (a >= 100 || v === Math.round(v)) { return String(Math.round(v)); }
    return v.toPrecision(3);
  }
  function runName(i) {
    var r = view.runs[i];
    return r ? '#' + r.id + (r.label ? ' ' + r.label : '') : '';
  }

  // The steps of a chart drawn on its canvas: a dashed line at the first run after
  // each, its change written beside it; where each was drawn is kept for the page's
  // readers (window.gloaddriverTrend).
  function markSteps(chart) {
    return function (u) {
      var ctx = u.ctx, drawn = [];
      ctx.save();
      chart.series.forEach(function (s, si) {
        s.steps.forEach(function (st) {
          var x = Math.round(u.valToPos(st.index, 'x', true));
          ctx.strokeStyle = COLORS[si % COLORS.length];
          ctx.lineWidth = 2 * devicePixelRatio;
          ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          ctx.setLineDash([]);
          ctx.fillStyle = COLORS[si % COLORS.length];
          ctx.font = (12 * devicePixelRatio) + 'px sans-serif';
          ctx.textAlign = 'left';
          ctx.textBaseline = 'alphabetic';
          ctx.fillText((st.change_pct > 0 ? '+' : '') + st.change_pct.toFixed(1) + '% ' + s.label,
                       x + 4 * devicePixelRatio, u.bbox.top + (14 + 14 * si) * devicePixelRatio);
          drawn.push({series: s.label, run: view.runs[st.index].id, index: st.index,
                      x: x, at: u.valToPos(st.index, 'x'), change_pct: st.change_pct});
        });
      });
      ctx.restore();
      u.marks = drawn;
    };
  }

  function draw(chart, box) {
    var xs = view.runs.map(function (r, i) { return i; });
    var data = [xs].concat(chart.series.map(function (s) { return s.values; }));
    var opts = {
      width: Math.max(320, box.clientWidth - 16), height: 260,
      scales: {x: {time: false}},
      axes: [{values: function (u, ticks) { return ticks.map(function (t) {
        return t === Math.round(t) ? runName(t) : ''; }); }},
             {label: chart.unit, size: 70, values: function (u, ticks) {
               return ticks.map(num); }}],
      series: [{label: 'run', value: function (u, v) { return v === null ? '-' : runName(v); }}]
        .concat(chart.series.map(function (s, i) {
          return {label: s.label, stroke: COLORS[i % COLORS.length], width: 2,
                  points: {show: true, size: 6}, spanGaps: false,
                  value: function (u, v) { return num(v); }};
        })),
      hooks: {draw: [markSteps(chart)]}
    };
    var u = new uPlot(opts, data, box);
    plots.push({id: chart.id, u: u, chart: chart});
  }

  function stepsList() {
    var rows = [];
    view.charts.forEach(function (c) {
      c.series.forEach(function (s) {
        s.steps.forEach(function (st) {
          rows.push([c.title, s.label, runName(st.index), num(st.before), num(st.after),
                     (st.change_pct > 0 ? '+' : '') + st.change_pct.toFixed(1) + '%', st]);
        });
      });
    });
    var sec = el('section');
    sec.appendChild(el('h2', null, 'Step changes'));
    if (!rows.length) {
      sec.appendChild(el('p', 'empty', 'none: no ' + view.window + ' runs in a row moved ' +
                         'beyond the ' + view.window + ' before them by ' +
                         view.min_change_pct + '% or more'));
      return sec;
    }
    var t = el('table', 'steps'), head = el('tr');
    ['figure', 'phase', 'first run after', 'mean before', 'mean after', 'change']
      .forEach(function (h) { head.appendChild(el('th', null, h)); });
    t.appendChild(head);
    rows.forEach(function (r) {
      var tr = el('tr', 'step');
      tr.setAttribute('data-run', view.runs[r[6].index].id);
      r.slice(0, 6).forEach(function (c) { tr.appendChild(el('td', null, c)); });
      t.appendChild(tr);
    });
    sec.appendChild(t);
    return sec;
  }

  function render() {
    app.textContent = '';
    app.appendChild(el('h1', null, view.title));
    app.appendChild(el('p', 'sub', view.runs.length + ' runs, ' + runName(0) + ' (' +
                       view.runs[0].started + ') to ' + runName(view.runs.length - 1) + ' (' +
                       view.runs[view.runs.length - 1].started + '); flags: ' + view.flags));
    var grid = el('div', 'grid');
    app.appendChild(grid);
    view.charts.forEach(function (c) {
      var fig = el('figure', 'chart');
      fig.setAttribute('data-chart', c.id);
      fig.appendChild(el('figcaption', null, c.title));
      grid.appendChild(fig);
      draw(c, fig);
    });
    app.appendChild(stepsList());
  }

  // For tests and screenshots: each chart as drawn, with its step marks.
  window.gloaddriverTrend = function () {
    return plots.map(function (p) {
      return {id: p.id, width: p.u.width, height: p.u.height, points: p.u.data[0].length,
              series: p.u.series.slice(1).map(function (s) { return s.label; }),
              marks: (p.u.marks || []).map(function (m) {
                // How many pixels of the canvas's column at the mark are painted.
                var img = p.u.ctx.getImageData(m.x, p.u.bbox.top, 1, p.u.bbox.height).data;
                var inked = 0;
                for (var k = 0; k < img.length; k += 4) { if (img[k + 3] > 0) { inked++; } }
                return {series: m.series, run: m.run, index: m.index, at: m.at,
                        change_pct: m.change_pct, inked: inked, height: p.u.bbox.height};
              }),
              runX: p.u.data[0].map(function (i) { return p.u.valToPos(i, 'x'); })};
    });
  };
  render();
}());
