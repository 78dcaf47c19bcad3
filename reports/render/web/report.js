// faultline HTML report: draws the charts from the JSON in #fl-data with uPlot (inlined before
// this script), and writes what it drew into #fl-render-status so that a headless browser
// (tests/reports/render) can check the page without looking at pixels itself:
//   data-state         "drawn" (every chart has pixels of its series), "blank" or "error"
//   data-charts        number of charts created
//   data-series-pixels per chart: pixels of the series' colours in the plot area
//   data-fault-windows fault windows drawn; data-fault-pixels: shaded pixels per window
//   data-markers       event markers drawn
//   data-levels        baseline and degraded level lines drawn on the job chart
//   data-timeline-bars timeline bar segments drawn (at least 1 px wide)
//   data-nic-series    NIC series drawn
//   data-errors        script errors and console.error calls seen (text: their messages)
// and, as JSON in #fl-drawn: the NIC chart's data as drawn ({labels, x, y, unit}), the fault
// windows (seconds since the start) and the timeline bars per fault ({kind, from_ms, to_ms,
// px}), so that a test can check what the charts show, not only that they have pixels.
// All text from the data goes into the page through textContent, never as HTML.
(function () {
  'use strict';
  var errors = window.flErrors || (window.flErrors = []);
  var statusEl = document.getElementById('fl-render-status');
  var charts = [];  // {name, seriesPixels}
  var faultPixels = [];
  var markersDrawn = 0;
  var levelsDrawn = 0;
  var drawn = {nics: null, faults: [], timeline: []};

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
  var JOB_COLOR = '#0969da', BASELINE_COLOR = '#1a7f37', DEGRADED_COLOR = '#bc4c00';
  // Timeline segments, named by the milestone that ends them.
  var MILESTONE_COLORS = {
    'detected': '#d97706', 'first progress': '#8250df', 'recovered': '#0598bc',
    'reverted': '#8c959f', 'failed back': '#1a7f37'
  };
  var MILESTONE_TEXT = {
    'detected': 'until detected', 'first progress': 'until the first progress',
    'recovered': 'until recovered (degraded steady state)', 'reverted': 'degraded until the revert',
    'failed back': 'until failed back (baseline again)'
  };

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

  // Shades every fault window from its request to its revert (the run's end when never
  // reverted) with its effective time as a line and its id on top; returns the windows' canvas
  // x ranges (inner pixels) for pixelStats.
  function shadeFaults(u, data) {
    var ctx = u.ctx, b = u.bbox, dpr = window.devicePixelRatio || 1;
    var windows = [];
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
    return windows;
  }

  function swatch(el, color, text) {
    var sw = document.createElement('span');
    sw.className = 'sw';
    sw.style.background = color;
    el.appendChild(sw);
    el.appendChild(document.createTextNode(text));
  }

  function legend(el, kinds, counts) {
    if (!el) return;
    kinds.forEach(function (kind, i) {
      swatch(el, eventColor(kind), kind + ' (' + counts[i] + ')');
    });
    if (kinds.length) swatch(el, 'rgba(207,34,46,0.25)', 'fault window (request to revert)');
  }

  // The element of a chart of the samples, or null when the page has none or the run has no
  // samples (the element then says so).
  function samplesChartElement(id, tp) {
    var el = document.getElementById(id);
    if (!el) return null;
    if (!tp.ranks.length) {
      el.textContent = 'No samples stored for this run.';
      return null;
    }
    return el;
  }

  function throughputChart(data) {
    var tp = data.throughput;
    var el = samplesChartElement('chart-throughput', tp);
    if (!el) return;
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
          windows = shadeFaults(u, data);
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

  // The job's line with the baseline across the run and each fault's degraded level over its
  // window (effective, else requested, to the revert).
  function jobChart(data) {
    var tp = data.throughput;
    var el = samplesChartElement('chart-job', tp);
    if (!el) return;
    var entry = {name: 'job', seriesPixels: 0};
    charts.push(entry);
    var peak = tp.baseline || 0;
    data.faults.forEach(function (f) { if (f.degraded !== null) peak = Math.max(peak, f.degraded); });
    function fmt(v) { return v === null ? '' : v.toPrecision(3) + ' ' + tp.unit; }
    new uPlot({
      width: chartWidth(el), height: 240,
      scales: {x: {time: false, range: [0, data.duration]}, y: {range: function (u, lo, hi) {
        var top = Math.max(hi, peak);
        return [0, top > 0 ? top * 1.12 : 1];
      }}},
      axes: [{label: 'seconds since the run started'},
             {label: 'job throughput (' + tp.unit + ')', size: 60}],
      series: [{label: 'time (s)'},
               {label: 'job', stroke: JOB_COLOR, width: 2, spanGaps: false, points: {show: false},
                value: function (u, v) { return fmt(v); }}],
      hooks: {
        drawClear: [function (u) {
          clearToWhite(u);
          entry.windows = shadeFaults(u, data);
        }],
        draw: [function (u) {
          var ctx = u.ctx, b = u.bbox, dpr = window.devicePixelRatio || 1;
          entry.seriesPixels = pixelStats(u, [JOB_COLOR], []).series;
          levelsDrawn = 0;
          ctx.save();
          ctx.lineWidth = 1.5 * dpr;
          ctx.setLineDash([6 * dpr, 4 * dpr]);
          ctx.font = Math.round(11 * dpr) + 'px sans-serif';
          function level(v, t0, t1, color, text, below) {
            var y = u.valToPos(v, 'y', true);
            var x0 = Math.max(b.left, u.valToPos(t0, 'x', true));
            var x1 = Math.min(b.left + b.width, u.valToPos(t1, 'x', true));
            if (x1 <= x0) return;
            ctx.strokeStyle = color;
            ctx.beginPath();
            ctx.moveTo(x0, y);
            ctx.lineTo(x1, y);
            ctx.stroke();
            ctx.fillStyle = color;
            ctx.fillText(text, Math.max(x0, x1 - ctx.measureText(text).width - 4 * dpr),
                         below ? y + 13 * dpr : y - 4 * dpr);
            levelsDrawn++;
          }
          if (tp.baseline !== null) level(tp.baseline, 0, data.duration, BASELINE_COLOR,
                                          'baseline ' + fmt(tp.baseline));
          data.faults.forEach(function (f) {
            var from = f.effective !== null ? f.effective : f.requested;
            if (f.degraded === null || from === null) return;
            level(f.degraded, from, f.reverted === null ? data.duration : f.reverted,
                  DEGRADED_COLOR, f.id + ' degraded ' + fmt(f.degraded), true);
          });
          ctx.restore();
        }]
      }
    }, [tp.x, tp.job], el);
  }

  // One row per fault: bar segments from the injection (0) through its milestones, on an
  // asinh time axis (linear under 1 ms, logarithmic above), and the expectation limits.
  function timelineChart(data) {
    var el = document.getElementById('chart-timeline');
    var rows = data.timeline;
    if (!el || !rows.length) return;
    var n = rows.length;
    var xmax = 1;
    rows.forEach(function (r) {
      r.marks.forEach(function (m) { xmax = Math.max(xmax, m[1]); });
      r.limits.forEach(function (l) { xmax = Math.max(xmax, l.ms); });
    });
    var used = {};
    rows.forEach(function (r) { r.marks.forEach(function (m) { used[m[0]] = true; }); });
    var lg = document.getElementById('timeline-legend');
    if (lg) {
      Object.keys(MILESTONE_COLORS).forEach(function (k) {
        if (used[k]) swatch(lg, MILESTONE_COLORS[k], MILESTONE_TEXT[k]);
      });
      swatch(lg, '#57606a', 'limit held');
      swatch(lg, '#cf222e', 'limit exceeded');
    }
    var colors = Object.keys(MILESTONE_COLORS).map(function (k) { return MILESTONE_COLORS[k]; });
    var entry = {name: 'timeline', seriesPixels: 0};
    charts.push(entry);
    function msText(v) {
      if (!(v > 0)) return '0';
      return v >= 1000 ? +(v / 1000).toPrecision(3) + ' s' : v >= 1 ? +v.toPrecision(3) + ' ms'
                                                                  : (v * 1000).toFixed(0) + ' us';
    }
    // Ticks at 0 and every decade of milliseconds up to the end of the axis.
    function decades(u, i, lo, hi) {
      var out = [0];
      for (var d = 1; d <= hi; d *= 10) out.push(d);
      return out;
    }
    // Row i (the first fault on top) is at y = n - 1 - i.
    new uPlot({
      // 46 px a row, down to 14 for many faults (a 1-hour run has 120)
      width: chartWidth(el), height: Math.max(120, Math.round(Math.max(14, Math.min(46, 1800 / n)) * n) + 60),
      legend: {show: false},
      cursor: {show: false},
      scales: {x: {time: false, distr: 4, asinh: 1, range: [0, xmax * 1.3]},
               y: {range: [-0.5, n - 0.5]}},
      axes: [{label: 'after the fault took effect', splits: decades,
              values: function (u, splits) { return splits.map(function (v) { return msText(v); }); }},
             {size: 170, splits: function () { return rows.map(function (r, i) { return n - 1 - i; }); },
              values: function (u, splits) {
                return splits.map(function (v) { var r = rows[n - 1 - v]; return r ? r.label : ''; });
              }}],
      series: [{label: 'ms'}, {label: 'fault', show: true, stroke: 'rgba(0,0,0,0)', points: {show: false}}],
      hooks: {
        drawClear: [clearToWhite],
        draw: [function (u) {
          var ctx = u.ctx, b = u.bbox, dpr = window.devicePixelRatio || 1;
          var rowH = Math.abs(u.valToPos(0, 'y', true) - u.valToPos(1, 'y', true));
          var barH = Math.max(4, rowH * 0.42);
          drawn.timeline = [];
          ctx.save();
          ctx.font = Math.round(10 * dpr) + 'px sans-serif';
          rows.forEach(function (r, i) {
            var yc = u.valToPos(n - 1 - i, 'y', true);
            var marks = r.marks.slice().sort(function (a, c) { return a[1] - c[1]; });
            var bars = [];
            var prev = 0;
            marks.forEach(function (m) {
              var x0 = u.valToPos(prev, 'x', true), x1 = u.valToPos(m[1], 'x', true);
              // A bar of any length is painted at least 1 px wide, so that a milestone a few ms
              // after the last (failed back right after the revert) still shows; px is what was
              // painted, 0 only for two milestones at the same time.
              var px = m[1] > prev ? Math.max(1, x1 - x0) : 0;
              ctx.fillStyle = MILESTONE_COLORS[m[0]] || '#6e7781';
              ctx.fillRect(x0, yc - barH / 2, Math.max(px, 1), barH);
              bars.push({kind: m[0], from_ms: prev, to_ms: m[1], px: Math.round(px)});
              // the milestone: a tick and its time
              ctx.fillStyle = '#1f2328';
              ctx.fillRect(x1 - 0.5 * dpr, yc - barH / 2 - 3 * dpr, dpr, barH + 6 * dpr);
              prev = m[1];
            });
            var x0 = u.valToPos(0, 'x', true);
            ctx.fillStyle = '#cf222e';
            ctx.fillRect(x0, yc - barH / 2 - 5 * dpr, 2 * dpr, barH + 10 * dpr);  // injected
            r.limits.forEach(function (l) {
              var x = u.valToPos(l.ms, 'x', true);
              ctx.strokeStyle = l.passed ? '#57606a' : '#cf222e';
              ctx.lineWidth = 1.5 * dpr;
              ctx.setLineDash([3 * dpr, 2 * dpr]);
              ctx.beginPath();
              ctx.moveTo(x, yc - rowH * 0.45);
              ctx.lineTo(x, yc + rowH * 0.45);
              ctx.stroke();
              ctx.setLineDash([]);
              ctx.fillStyle = ctx.strokeStyle;
              ctx.fillText('max ' + l.name + ' ' + msText(l.ms), x + 3 * dpr, yc - rowH * 0.3);
            });
            drawn.timeline.push({id: r.id, bars: bars});
          });
          ctx.restore();
          entry.seriesPixels = pixelStats(u, colors, []).series;
        }]
      }
    }, [[0, xmax * 1.3], [null, null]], el);
  }

  function nicChart(data) {
    var el = document.getElementById('chart-nics');
    var nics = data.nics;
    if (!el || !nics.labels.length) return;
    var colors = nics.labels.map(function (l, i) { return RANK_COLORS[i % RANK_COLORS.length]; });
    var series = [{label: 'time (s)'}];
    nics.labels.forEach(function (l, i) {
      series.push({label: l, stroke: colors[i], width: 1.5, spanGaps: false, points: {show: false}});
    });
    var entry = {name: 'nics', seriesPixels: 0};
    charts.push(entry);
    drawn.nics = {labels: nics.labels, unit: nics.unit, x: nics.x, y: nics.y};
    new uPlot({
      width: chartWidth(el), height: 300,
      scales: {x: {time: false, range: [0, data.duration]}, y: {range: function (u, lo, hi) {
        return [0, hi > 0 ? hi * 1.08 : 1];
      }}},
      axes: [{label: 'seconds since the run started'},
             {label: 'rx + tx per NIC (' + nics.unit + ')', size: 60}],
      legend: {show: nics.labels.length <= 24},
      series: series,
      hooks: {
        drawClear: [function (u) {
          clearToWhite(u);
          shadeFaults(u, data);
        }],
        draw: [function (u) { entry.seriesPixels = pixelStats(u, colors, []).series; }]
      }
    }, [nics.x].concat(nics.y), el);
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
    statusEl.setAttribute('data-levels', String(levelsDrawn));
    var bars = 0;
    drawn.timeline.forEach(function (r) {
      r.bars.forEach(function (b) { if (b.px >= 1) bars++; });
    });
    statusEl.setAttribute('data-timeline-bars', String(bars));
    statusEl.setAttribute('data-nic-series', String(drawn.nics ? drawn.nics.labels.length : 0));
    var drawnEl = document.getElementById('fl-drawn');
    if (drawnEl) drawnEl.textContent = JSON.stringify(drawn);
    statusEl.setAttribute('data-errors', String(errors.length));
    statusEl.textContent = errors.join('\n');
  }

  try {
    var data = JSON.parse(document.getElementById('fl-data').textContent);
    drawn.faults = data.faults;
    jobChart(data);
    throughputChart(data);
    timelineChart(data);
    faultChart(data);
    nicChart(data);
  } catch (e) {
    errors.push('report.js: ' + (e && e.stack ? e.stack : e));
  }
  // uPlot draws in a microtask after construction; a task runs after it.
  setTimeout(finish, 0);
})();
