// faultline history page (`faultline history --html`): one uPlot chart per metric from the JSON
// in #fl-data (runs evenly spaced, oldest to newest; passed runs blue, failed runs red, a run
// without a value as a red x at the bottom), and what it drew in #fl-render-status for the
// browser test, as the run report does (report.js):
//   data-state "drawn" / "blank" / "error", data-charts, data-series-pixels (per chart),
//   data-points (points drawn), data-failed-points, data-gaps, data-errors.
(function () {
  'use strict';
  var errors = window.flErrors || (window.flErrors = []);
  var statusEl = document.getElementById('fl-render-status');
  var charts = [];
  var LINE = '#0969da', FAILED = '#cf222e';
  var points = 0, failedPoints = 0, gaps = 0;

  function rgb(hex) {
    return [parseInt(hex.substr(1, 2), 16), parseInt(hex.substr(3, 2), 16),
            parseInt(hex.substr(5, 2), 16)];
  }
  function seriesPixels(u, colors) {
    var b = u.bbox;
    var w = Math.max(1, Math.floor(b.width)), h = Math.max(1, Math.floor(b.height));
    var img = u.ctx.getImageData(Math.floor(b.left), Math.floor(b.top), w, h).data;
    var cols = colors.map(rgb), n = 0;
    for (var i = 0; i < img.length; i += 4)
      for (var c = 0; c < cols.length; c++)
        if (Math.abs(img[i] - cols[c][0]) + Math.abs(img[i + 1] - cols[c][1]) +
            Math.abs(img[i + 2] - cols[c][2]) < 40) { n++; break; }
    return n;
  }

  function chart(s, index) {
    var el = document.getElementById('history-chart-' + index);
    if (!el) return;
    var n = s.y.length;
    var xs = s.y.map(function (v, i) { return i; });
    var passed = s.y.map(function (v, i) { return s.failed[i] ? null : v; });
    var failed = s.y.map(function (v, i) { return s.failed[i] ? v : null; });
    var entry = {name: 'hist' + index, seriesPixels: 0};
    charts.push(entry);
    var step = Math.max(1, Math.ceil(n / 8));
    var noLine = function () { return null; };
    new uPlot({
      width: Math.max(480, Math.min(1000, (el.clientWidth || document.body.clientWidth) - 8)),
      height: 240,
      scales: {x: {time: false, range: [-0.5, Math.max(0.5, n - 0.5)]}},
      axes: [{label: 'runs, oldest to newest (' + n + ')',
              splits: function () { return xs.filter(function (i) { return i % step === 0; }); },
              values: function (u, splits) {
                return splits.map(function (i) { return (s.started[i] || '').substr(5, 11); });
              }},
             {label: s.unit, size: 70,
              values: function (u, splits) { return splits.map(function (v) { return String(+v.toPrecision(4)); }); }}],
      series: [{label: 'run', value: function (u, i) { return i === null ? '' : s.runs[i] || ''; }},
               {label: s.key, stroke: LINE, width: 1.5, spanGaps: true, points: {show: false},
                value: function (u, v, si, i) { return i === null || v === null ? '' : s.text[i]; }},
               {label: 'passed', stroke: LINE, paths: noLine, points: {show: true, size: 8, fill: LINE, stroke: LINE}},
               {label: 'failed', stroke: FAILED, paths: noLine, points: {show: true, size: 8, fill: FAILED, stroke: FAILED}}],
      hooks: {
        drawClear: [function (u) {
          var b = u.bbox, ctx = u.ctx;
          ctx.save();
          ctx.fillStyle = '#fff';
          ctx.fillRect(b.left, b.top, b.width, b.height);
          ctx.restore();
        }],
        draw: [function (u) {
          var ctx = u.ctx, b = u.bbox, dpr = window.devicePixelRatio || 1;
          ctx.save();
          ctx.fillStyle = FAILED;
          ctx.font = Math.round(13 * dpr) + 'px sans-serif';
          ctx.textAlign = 'center';
          s.y.forEach(function (v, i) {
            if (v !== null) return;
            ctx.fillText('\u00d7', u.valToPos(i, 'x', true), b.top + b.height - 4 * dpr);
          });
          ctx.restore();
          entry.seriesPixels = seriesPixels(u, [LINE, FAILED]);
        }]
      }
    }, [xs, s.y, passed, failed], el);
    s.y.forEach(function (v, i) {
      if (v === null) {
        gaps++;
        return;
      }
      points++;
      if (s.failed[i]) failedPoints++;
    });
  }

  function finish() {
    var blank = charts.filter(function (c) { return !(c.seriesPixels > 0); });
    statusEl.setAttribute('data-state', errors.length ? 'error' : (blank.length ? 'blank' : 'drawn'));
    statusEl.setAttribute('data-charts', String(charts.length));
    statusEl.setAttribute('data-series-pixels',
                          charts.map(function (c) { return c.name + ':' + c.seriesPixels; }).join(','));
    statusEl.setAttribute('data-points', String(points));
    statusEl.setAttribute('data-failed-points', String(failedPoints));
    statusEl.setAttribute('data-gaps', String(gaps));
    statusEl.setAttribute('data-errors', String(errors.length));
    statusEl.textContent = errors.join('\n');
  }

  try {
    var data = JSON.parse(document.getElementById('fl-data').textContent);
    data.series.forEach(chart);
  } catch (e) {
    errors.push('history.js: ' + (e && e.stack ? e.stack : e));
  }
  setTimeout(finish, 0);
})();
