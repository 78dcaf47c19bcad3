// faultline HTML report: draws the charts from the JSON in #fl-data with uPlot (inlined before
// this script), and writes what it drew into #fl-render-status so that a headless browser
// (tests/reports/render) can check the page without looking at pixels itself:
//   data-state         "drawn" (every chart has pixels of its series), "blank" or "error"
//   data-charts        number of charts created
//   data-series-pixels per chart: pixels of the series' colours in the plot area
//   data-fault-windows fault windows drawn; data-fault-pixels: shaded pixels per window
//   data-markers       event markers drawn
//   data-errors        script errors and console.error calls seen (text: their messages)
// All text from the data goes into the page through textContent, never as HTML.
(function () {
  'use strict';
  var errors = window.flErrors || (window.flErrors = []);
  var statusEl = document.getElementById('fl-render-status');
  var charts = [];  // {name, seriesPixels}
  var faultPixels = [];
  var markersDrawn = 0;

  var RANK_COLORS = ['#0969da', '#1f883d', '#8250df', '#bf8700', '#0598bc', '#57606a',
                     '#bc4c00', '#4d2d00', '#1b1f24', '#6639ba', '#116329', '#0550ae'];
  var EVENT_COLORS = {
    fault_detected: '#d97706', failover_done: '#8250df', path_restored: '#1a7f37',
    job_restarted: '#0969da', job_failed: '#82071e', collective_failed: '#82071e',
    inject_failed: '#82071e', rank_exit: '#82071e'
  };
  var LATENCY_COLORS = ['#d97706', '#8250df', '#0969da', '#cf222e', '#1a7f37', '#0598bc',
                        '#57606a'];
  var SHADE = [207, 34, 46], SHADE_ALPHA = 0.13;

  function rgb(hex) {
    return [parseInt(hex.substr(1, 2), 16), parseInt(hex.substr(3, 2), 16),
            parseInt(hex.substr(5, 2), 16)];
  }
  function eventColor(kind) { return EVENT_COLORS[kind] || '#6e7781'; }
  function chartWidth(el) {
    return Math.max(480, Math.min(1200, (el.clientWidth || document.body.clientWidth) - 8));
  }
  function clearToWhite(u) {
    var b = u.bbox, ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = '#fff';
    ctx.fillRect(b.left, b.top, b.width, b.height);
    ctx.restore();
  }

  // Pixels of the plot area that are close to one of the colours (lines are anti-aliased, so
  // only their core counts), and the shaded pixels inside each rectangle [x0, x1).
  function pixelStats(u, colors, rects) {
    var b = u.bbox;
    var w = Math.max(1, Math.floor(b.width)), h = Math.max(1, Math.floor(b.height));
    var img = u.ctx.getImageData(Math.floor(b.left), Math.floor(b.top), w, h).data;
    var cols = colors.map(rgb);
    var shade = SHADE.map(function (c) { return Math.round(255 * (1 - SHADE_ALPHA) + c * SHADE_ALPHA); });
    var series = 0, shaded = rects.map(function () { return 0; });
    for (var y = 0; y < h; y++) {
      for (var x = 0; x < w; x++) {
        var i = (y * w + x) * 4, r = img[i], g = img[i + 1], bl = img[i + 2];
        for (var c = 0; c < cols.length; c++) {
          if (Math.abs(r - cols[c][0]) + Math.abs(g - cols[c][1]) + Math.abs(bl - cols[c][2]) < 40) {
            series++;
            break;
          }
        }
        if (Math.abs(r - shade[0]) + Math.abs(g - shade[1]) + Math.abs(bl - shade[2]) <= 6) {
          var px = x + Math.floor(b.left);
          for (var k = 0; k < rects.length; k++)
            if (px >= rects[k][0] && px < rects[k][1]) shaded[k]++;
        }
      }
    }
    return {series: series, shaded: shaded};
  }

  function legend(el, kinds, counts) {
    if (!el) return;
    kinds.forEach(function (kind, i) {
      var sw = document.createElement('span');
      sw.className = 'sw';
      sw.style.background = eventColor(kind);
      el.appendChild(sw);
      el.appendChild(document.createTextNode(kind + ' (' + counts[i] + ')'));
    });
    if (kinds.length) {
      var sw = document.createElement('span');
      sw.className = 'sw';
      sw.style.background = 'rgba(207,34,46,0.25)';
      el.appendChild(sw);
      el.appendChild(document.createTextNode('fault window (request to revert)'));
    }
  }

  function throughputChart(data) {
    var el = document.getElementById('chart-throughput');
    var tp = data.throughput;
    if (!el) return;
    if (!tp.ranks.length) {
      el.textContent = 'No samples stored for this run.';
      return;
    }
    var colors = tp.ranks.map(function (r, i) { return RANK_COLORS[i % RANK_COLORS.length]; });
    var series = [{label: 'time (s)'}];
    tp.ranks.forEach(function (r, i) {
      series.push({label: 'rank ' + r, stroke: colors[i], width: 1.5, spanGaps: false,
                   points: {show: false}});
    });
    var ev = data.events;
    var counts = ev.kinds.map(function () { return 0; });
    ev.k.forEach(function (k) { counts[k]++; });
    legend(document.getElementById('event-legend'), ev.kinds, counts);
    var windows = [];  // canvas x ranges of the fault windows of the last draw
    var entry = {name: 'throughput', seriesPixels: 0};
    charts.push(entry);

    var opts = {
      width: chartWidth(el), height: 340,
      scales: {x: {time: false, range: [0, data.duration]}, y: {range: function (u, lo, hi) {
        return [0, hi > 0 ? hi * 1.08 : 1];
      }}},
      axes: [{label: 'seconds since the run started'}, {label: 'per-rank throughput (' + tp.unit + ')', size: 60}],
      legend: {show: tp.ranks.length <= 16},
      series: series,
      hooks: {
        drawClear: [function (u) {
          clearToWhite(u);
          var ctx = u.ctx, b = u.bbox, dpr = window.devicePixelRatio || 1;
          windows = [];
          ctx.save();
          ctx.font = Math.round(11 * dpr) + 'px sans-serif';
          data.faults.forEach(function (f) {
            if (f.requested === null) return;
            var end = f.reverted === null ? data.duration : f.reverted;
            var x0 = Math.max(b.left, u.valToPos(f.requested, 'x', true));
            var x1 = Math.min(b.left + b.width, u.valToPos(end, 'x', true));
            if (x1 - x0 < 1) x1 = x0 + 1;
            ctx.fillStyle = 'rgba(' + SHADE.join(',') + ',' + SHADE_ALPHA + ')';
            ctx.fillRect(x0, b.top, x1 - x0, b.height);
            windows.push([Math.floor(x0) + 1, Math.floor(x1) - 1]);
            if (f.effective !== null) {
              var xe = u.valToPos(f.effective, 'x', true);
              ctx.fillStyle = 'rgba(207,34,46,0.7)';
              ctx.fillRect(xe, b.top, Math.max(1, dpr), b.height);
            }
            ctx.fillStyle = '#82071e';
            ctx.fillText(f.id, x0 + 3 * dpr, b.top + 12 * dpr);
          });
          ctx.restore();
        }],
        draw: [function (u) {
          var ctx = u.ctx, b = u.bbox, dpr = window.devicePixelRatio || 1;
          var stats = pixelStats(u, colors, windows);  // before the markers cover anything
          markersDrawn = 0;
          ctx.save();
          for (var i = 0; i < ev.t.length; i++) {
            var x = u.valToPos(ev.t[i], 'x', true);
            if (x < b.left || x > b.left + b.width) continue;
            ctx.strokeStyle = eventColor(ev.kinds[ev.k[i]]);
            ctx.globalAlpha = 0.75;
            ctx.lineWidth = dpr;
            ctx.setLineDash([4 * dpr, 3 * dpr]);
            ctx.beginPath();
            ctx.moveTo(x, b.top + 16 * dpr);
            ctx.lineTo(x, b.top + b.height);
            ctx.stroke();
            ctx.setLineDash([]);
            ctx.fillStyle = ctx.strokeStyle;
            ctx.beginPath();
            ctx.moveTo(x - 4 * dpr, b.top + 16 * dpr);
            ctx.lineTo(x + 4 * dpr, b.top + 16 * dpr);
            ctx.lineTo(x, b.top + 22 * dpr);
            ctx.fill();
            markersDrawn++;
          }
          ctx.restore();
          entry.seriesPixels = stats.series;
          faultPixels = stats.shaded;
        }]
      }
    };
    new uPlot(opts, [tp.x].concat(tp.y), el);
  }

  function faultChart(data) {
    var el = document.getElementById('chart-faults');
    var pf = data.per_fault;
    if (!el || !pf.ids.length) return;
    var present = pf.series.filter(function (s) {
      return s.values.some(function (v) { return v !== null && v > 0; });
    });
    if (!present.length) {
      el.textContent = 'No detection or recovery was measured for any fault.';
      return;
    }
    var colors = present.map(function (s, i) { return LATENCY_COLORS[i % LATENCY_COLORS.length]; });
    var xs = pf.ids.map(function (id, i) { return i; });
    var series = [{label: 'fault', value: function (u, v) { return v === null ? '' : pf.ids[v]; }}];
    present.forEach(function (s, i) {
      series.push({label: s.name + ' (ms)', stroke: colors[i], width: 1,
                   points: {show: true, size: 11, fill: colors[i], stroke: colors[i]}});
    });
    var ys = present.map(function (s) {
      return s.values.map(function (v) { return v !== null && v > 0 ? v : null; });
    });
    var entry = {name: 'faults', seriesPixels: 0};
    charts.push(entry);
    new uPlot({
      width: chartWidth(el), height: 260,
      scales: {x: {time: false, range: [-0.5, pf.ids.length - 0.5]}, y: {distr: 3, log: 10}},
      axes: [{label: 'fault', splits: function () { return xs; },
              values: function (u, splits) { return splits.map(function (v) { return pf.ids[v] || ''; }); }},
             {label: 'ms', size: 60}],
      series: series,
      hooks: {
        drawClear: [clearToWhite],
        draw: [function (u) { entry.seriesPixels = pixelStats(u, colors, []).series; }]
      }
    }, [xs].concat(ys), el);
  }

  function finish() {
    var blank = charts.filter(function (c) { return !(c.seriesPixels > 0); });
    var state = errors.length ? 'error' : (blank.length ? 'blank' : 'drawn');
    statusEl.setAttribute('data-state', state);
    statusEl.setAttribute('data-charts', String(charts.length));
    statusEl.setAttribute('data-series-pixels',
                          charts.map(function (c) { return c.name + ':' + c.seriesPixels; }).join(','));
    statusEl.setAttribute('data-fault-windows', String(faultPixels.length));
    statusEl.setAttribute('data-fault-pixels', faultPixels.join(','));
    statusEl.setAttribute('data-markers', String(markersDrawn));
    statusEl.setAttribute('data-errors', String(errors.length));
    statusEl.textContent = errors.join('\n');
  }

  try {
    var data = JSON.parse(document.getElementById('fl-data').textContent);
    throughputChart(data);
    faultChart(data);
  } catch (e) {
    errors.push('report.js: ' + (e && e.stack ? e.stack : e));
  }
  // uPlot draws in a microtask after construction; a task runs after it.
  setTimeout(finish, 0);
})();
