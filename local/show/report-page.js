/* global uPlot, document, window */
/**
 * The HTML report's script (inlined by local/show/report.ts after uPlot): draws every chart from the
 * JSON the page embeds. Plain browser JavaScript on purpose: it is inlined as text, and a
 * TypeScript function serialised with toString() would carry the transpiler's helpers.
 *
 * When a chart has drawn, its element gets data-drawn, data-series, data-points, data-marks and
 * data-plot-rect (the plot area in CSS pixels); once every chart has, the body gets
 * data-charts-drawn and the title says so. The browser test reads these from the DOM and looks at
 * the screenshot's plot areas. A script error is put on the body as data-chart-error.
 */
(function () {
  "use strict";
  var body = document.body;
  window.addEventListener("error", function (e) {
    body.setAttribute("data-chart-error", String(e.message || e));
  });

  var data = JSON.parse(document.getElementById("report-data").textContent);
  // Shades per kind: a chart's sources are blues, its DLQs reds, its quarantines oranges; the first of each is the one tests look for.
  var COLORS = {
    source: ["#0969da", "#54aeff", "#0550ae", "#79c0ff"],
    dlq: ["#cf222e", "#ff8182", "#82071e"],
    quarantine: ["#bc4c00", "#fb8f44"],
    gpu: ["#1a7f37"],
    deliveries: ["#8250df"],
    tasks: ["#57606a"],
    capacity: ["#9a6700", "#1a7f37"],
  };
  function colorOf(kind, used) {
    var shades = COLORS[kind] || ["#57606a"];
    var i = used[kind] || 0;
    used[kind] = i + 1;
    return shades[i % shades.length];
  }
  var MARK = { timing: "#6639ba", gpu: "#1a7f37", alarm: "#bc4c00" };
  var PHASES = ["stopped", "booting", "serving"];

  /** Simulated seconds as m:ss (h:mm:ss past an hour). */
  function clock(s) {
    if (s === null || s === undefined) return "—";
    var t = Math.max(0, Math.round(s));
    var h = Math.floor(t / 3600);
    var m = Math.floor(t / 60) % 60;
    var sec = String(t % 60).padStart(2, "0");
    return h > 0 ? h + ":" + String(m).padStart(2, "0") + ":" + sec : m + ":" + sec;
  }

  /**
   * Draws the marks over the plot: a timing's span shaded and a numbered line, then each event as
   * a dashed line with its name. Timings first, so the events' names can start below the discs.
   */
  function marksPlugin(marks) {
    return {
      hooks: {
        draw: [
          function (u) {
            var px = window.devicePixelRatio || 1;
            u.ctx.save();
            u.ctx.font = Math.round(11 * px) + "px system-ui, sans-serif";
            u.ctx.textBaseline = "top";
            drawEvents(u, marks, px, drawTimings(u, marks, px));
            u.ctx.restore();
          },
        ],
      },
    };
  }

  /** A line across the plot at x: solid for a timing, dashed for an event. */
  function markLine(u, x, color, dashed, px) {
    var ctx = u.ctx;
    ctx.strokeStyle = color;
    ctx.lineWidth = (dashed ? 1.5 : 2) * px;
    ctx.setLineDash(dashed ? [5 * px, 4 * px] : []);
    ctx.beginPath();
    ctx.moveTo(x, u.bbox.top);
    ctx.lineTo(x, u.bbox.top + u.bbox.height);
    ctx.stroke();
    ctx.setLineDash([]);
  }

  /** Each timing: its span shaded, its line, and its numbered disc; returns the discs' centres. */
  function drawTimings(u, marks, px) {
    var ctx = u.ctx;
    var box = u.bbox;
    var r = 8 * px;
    var discs = [];
    marks.forEach(function (m) {
      if (m.kind !== "timing") return;
      var x = Math.round(u.valToPos(m.atS, "x", true));
      if (typeof m.fromS === "number" && m.fromS < m.atS) {
        var from = u.valToPos(m.fromS, "x", true);
        ctx.fillStyle = "rgba(102, 57, 186, 0.05)";
        ctx.fillRect(from, box.top, x - from, box.height);
      }
      markLine(u, x, MARK.timing, false, px);
      // A numbered disc on the top edge, matching the list under the charts; kept inside
      // the plot, and moved down a row while it would cover an earlier one.
      var cx = Math.min(Math.max(x, box.left + r), box.left + box.width - r);
      var cy = box.top + r + 1;
      while (
        discs.some(function (d) {
          return Math.abs(d[0] - cx) < 2 * r && Math.abs(d[1] - cy) < 2 * r;
        })
      )
        cy += 2 * r + 2 * px;
      discs.push([cx, cy]);
      ctx.fillStyle = MARK.timing;
      ctx.beginPath();
      ctx.arc(cx, cy, r, 0, 2 * Math.PI);
      ctx.fill();
      ctx.fillStyle = "#fff";
      ctx.textAlign = "center";
      ctx.fillText(m.label, cx, cy - 6 * px);
    });
    return discs;
  }

  /**
   * Each event: its dashed line, and its name in the first row below the discs where it overprints
   * no earlier name; near the right edge the name reads leftwards from its line.
   */
  function drawEvents(u, marks, px, discs) {
    var ctx = u.ctx;
    var box = u.bbox;
    var r = 8 * px;
    var top = discs.reduce(
      function (y, d) {
        return Math.max(y, d[1] + r + 3 * px);
      },
      box.top + 2 * r + 4 * px,
    );
    var rows = [];
    marks.forEach(function (m) {
      if (m.kind === "timing") return;
      var x = Math.round(u.valToPos(m.atS, "x", true));
      var color = MARK[m.kind] || "#57606a";
      markLine(u, x, color, true, px);
      var width = ctx.measureText(m.label).width;
      var left = x > box.left + box.width * 0.75 ? x - 4 * px - width : x + 4 * px;
      var row = 0;
      while (
        row < 6 &&
        (rows[row] || []).some(function (span) {
          return left < span[1] + 6 * px && left + width > span[0] - 6 * px;
        })
      )
        row++;
      rows[row] = (rows[row] || []).concat([[left, left + width]]);
      ctx.textAlign = "left";
      ctx.fillStyle = color;
      ctx.fillText(m.label, left, top + row * 14 * px);
    });
  }

  var charts = document.querySelectorAll(".chart[data-chart]");
  var drawn = 0;

  function noteDrawn(el, u, series, points, marks) {
    if (el.getAttribute("data-drawn")) return;
    var r = u.over.getBoundingClientRect();
    el.setAttribute("data-drawn", "1");
    el.setAttribute("data-series", String(series));
    el.setAttribute("data-points", String(points));
    el.setAttribute("data-marks", String(marks));
    el.setAttribute("data-plot-rect", [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height].map(Math.round).join(","));
    drawn++;
    if (drawn === charts.length) {
      body.setAttribute("data-charts-drawn", String(drawn));
      document.title = document.title + " (" + drawn + " charts drawn)";
    }
  }

  function xAxis() {
    return {
      label: "simulated time since the scenario started (m:ss)",
      values: function (u, splits) {
        return splits.map(clock);
      },
    };
  }

  /** The x series both charts share: simulated seconds since the scenario started. */
  function timeSeries() {
    return {
      label: "time",
      value: function (u, v) {
        return clock(v) + " sim";
      },
    };
  }

  /** A count's scale: from 0, with headroom above the highest value. */
  function countScale() {
    return {
      range: function (u, min, max) {
        return [0, Math.max(2, Math.ceil((max || 0) * 1.15))];
      },
    };
  }

  /** The x scale both charts share: the scenario's whole duration. */
  function xScale(s) {
    return { time: false, range: [0, Math.max(1, s.durationS)] };
  }

  function queueChart(s) {
    return {
      title: "messages on each queue (visible, in flight and delayed)",
      list: s.queues,
      height: 230,
      scales: { x: xScale(s), y: countScale() },
      axes: [xAxis(), { label: "messages" }],
    };
  }

  function isPhase(a) {
    return a.kind === "gpu";
  }

  /** The GPU's phase (stopped, booting, serving) on its own stepped scale; every other activity is a count. */
  function activityChart(s) {
    var hasPhase = s.activity.some(isPhase);
    var axes = [xAxis()];
    if (hasPhase) axes.push(phaseAxis());
    if (!s.activity.every(isPhase)) axes.push({ scale: "count", label: "count", side: hasPhase ? 1 : 3, grid: { show: !hasPhase } });
    return {
      title: "the GPU, deliveries, ECS tasks and GPU capacity",
      list: s.activity,
      height: 190,
      scales: { x: xScale(s), phase: { range: [-0.1, 2.6] }, count: countScale() },
      axes: axes,
      // Activity is stepped: a phase or a count holds until the next sample.
      line: function (a) {
        return { scale: isPhase(a) ? "phase" : "count", fill: isPhase(a) ? "rgba(26, 127, 55, 0.08)" : undefined, paths: uPlot.paths.stepped({ align: 1 }) };
      },
    };
  }

  /** One line per series of the chart, coloured by its kind, after the shared time series. */
  function seriesOf(spec) {
    var used = {};
    return [timeSeries()].concat(
      spec.list.map(function (a) {
        var line = {
          label: a.label,
          stroke: colorOf(a.kind, used),
          width: 2,
          points: { show: false },
          value: function (u, v) {
            return v === null ? "—" : isPhase(a) ? PHASES[v] : String(v);
          },
        };
        return Object.assign(line, spec.line ? spec.line(a) : {});
      }),
    );
  }

  function phaseAxis() {
    return {
      scale: "phase",
      label: "GPU",
      splits: function () {
        return [0, 1, 2];
      },
      values: function (u, splits) {
        return splits.map(function (v) {
          return PHASES[v] || "";
        });
      },
      size: 70,
    };
  }

  Array.prototype.forEach.call(charts, function (el) {
    var s = data.scenarios[Number(el.getAttribute("data-scenario-index"))];
    var spec = el.getAttribute("data-chart") === "queues" ? queueChart(s) : activityChart(s);
    var lines = spec.list.length;
    var opts = {
      title: spec.title,
      width: Math.max(320, el.clientWidth || 1000),
      height: spec.height,
      scales: spec.scales,
      axes: spec.axes,
      series: seriesOf(spec),
      cursor: { drag: { x: true, y: false } },
      plugins: [marksPlugin(s.marks)],
      hooks: {
        draw: [
          function (u) {
            noteDrawn(el, u, lines, s.t.length, s.marks.length);
          },
        ],
      },
    };
    var values = [s.t].concat(
      spec.list.map(function (x) {
        return x.values;
      }),
    );
    new uPlot(opts, values, el);
  });

  if (charts.length === 0) body.setAttribute("data-charts-drawn", "0");
})();
