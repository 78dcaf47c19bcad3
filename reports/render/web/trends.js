// `faultline serve`'s trends page (reports/serve/results_site.cc): one uPlot chart per metric
// from the JSON in #fl-trends-data: the nightly median, min and max, and each change point as
// a red vertical line at its first night. What was drawn goes into #fl-render-status (charts,
// change points, script errors) for the headless-browser test.
(function () {
  var status = document.getElementById('fl-render-status');
  var charts = 0, marks = 0;
  try {
    var data = JSON.parse(document.getElementById('fl-trends-data').textContent);
    data.series.forEach(function (s, i) {
      var el = document.getElementById('fl-trend-' + i);
      var xs = s.nights.map(function (n) { return Date.parse(n.night + 'T00:00:00Z') / 1000; });
      var med = s.nights.map(function (n) { return n.median; });
      var lo = s.nights.map(function (n) { return n.min; });
      var hi = s.nights.map(function (n) { return n.max; });
      var cps = s.change_points.map(function (c) { return xs[c.night_index]; });
      var opts = {
        width: Math.min(1000, Math.max(400, el.clientWidth || 900)), height: 260,
        series: [{},
          {label: 'median', stroke: '#1a56db', width: 2},
          {label: 'min', stroke: '#9ca3af', dash: [4, 4]},
          {label: 'max', stroke: '#9ca3af', dash: [4, 4]}],
        hooks: {draw: [function (u) {
          var ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = '#e02424';
          ctx.lineWidth = 2;
          cps.forEach(function (x) {
            var px = u.valToPos(x, 'x', true);
            ctx.beginPath();
            ctx.moveTo(px, u.bbox.top);
            ctx.lineTo(px, u.bbox.top + u.bbox.height);
            ctx.stroke();
          });
          ctx.restore();
        }]}
      };
      new uPlot(opts, [xs, med, lo, hi], el);
      charts++;
      marks += cps.length;
    });
  } catch (e) {
    window.flErrors.push(String(e && e.stack || e));
  }
  status.setAttribute('data-charts', String(charts));
  status.setAttribute('data-change-points', String(marks));
  status.setAttribute('data-errors', String(window.flErrors.length));
  status.setAttribute('data-state', 'drawn');
  status.textContent = window.flErrors.join('\n');
})();
