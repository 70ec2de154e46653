/**
 * The HTML report of a local run (`npm start -- --report run.html`): per scenario, a timeline of
 * its queues' depths and of the GPU, deliveries and tasks, with the key timings, the GPU's starts
 * and stops and the alarms marked on it.
 *
 * Two pure steps, tested without a run or a browser: `buildReportData` cuts what the recorder
 * (../observe/report-recorder.ts) saw into one timeline per scenario, and `renderReport` turns that into one
 * self-contained page. The charting library (uPlot) and the page's script (./report-page.js) are
 * inlined, so the file opens offline and fetches nothing.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { RecordedEvent, RecordedSample, ScenarioWindow } from "../observe/report-recorder";
import type { AlarmReport } from "../observe/alarm-watch";
import type { LocalQueue } from "../provision/topology-types";
import { runTime } from "../observe/alarm-eval";
import { COUNT_KEYS, formatTiming, rowOk, SUMMARY_HEADERS } from "./summary";
import { seconds } from "./text";
import type { ScenarioSummary, Timing } from "./view";

/** How a series is drawn: its chart, colour and scale follow from it. */
export type SeriesKind = "source" | "dlq" | "quarantine" | "gpu" | "deliveries" | "tasks" | "capacity";

export interface ReportSeries {
  label: string;
  kind: SeriesKind;
  /** One per sample (null: no reading). GPU: 0 stopped, 1 booting, 2 serving. */
  values: Array<number | null>;
}

export interface ReportMark {
  kind: "timing" | "gpu" | "alarm";
  /** Shown next to the line: the timing's number in the list under the chart, or the event. */
  label: string;
  /** Simulated seconds since the scenario started. */
  atS: number;
  /** A timing's start: the chart shades from here to `atS`. */
  fromS?: number;
}

export interface ReportTiming {
  /** The number its mark carries on the chart; absent when the timing has no mark (never happened, or not marked). */
  n?: number;
  name: string;
  timing: Timing | null;
}

export interface ReportScenario {
  name: string;
  title: string;
  summary: ScenarioSummary;
  /** Simulated seconds the scenario took: the charts' x range. */
  durationS: number;
  /** Simulated seconds since the scenario started, one per sample. */
  t: number[];
  queues: ReportSeries[];
  /** The GPU's phase, its deliveries and the ECS tasks running; only those that moved. */
  activity: ReportSeries[];
  marks: ReportMark[];
  timings: ReportTiming[];
}

export interface ReportData {
  project: string;
  stack: string;
  speed: number;
  wallMs: number;
  ok: boolean;
  /** ISO time the report was written. */
  generatedAt: string;
  scenarios: ReportScenario[];
  /** Every time an alarm would have fired, in simulated time since the run's start. */
  alarms: Array<{ alarm: string; queue?: string; at: string; value: number; threshold?: number; backToOk?: string }>;
}

export interface ReportInput {
  meta: { project: string; stack: string; speed: number; wallMs: number; generatedAt: Date };
  rows: ScenarioSummary[];
  recorded: { samples: RecordedSample[]; events: RecordedEvent[]; windows: ScenarioWindow[] };
  queues: LocalQueue[];
  alarms: AlarmReport;
  /** Real epoch ms at which simulated time began (SimClock.t0): alarm times count from it. */
  clockT0Ms: number;
}

const GPU_PHASE_VALUE = { stopped: 0, booting: 1, serving: 2 } as const;

/** source, dlq or quarantine: the queue's `encache:queue-role` tag, else its name. */
export function queueKind(q: Pick<LocalQueue, "logicalName" | "role">): SeriesKind {
  const role = q.role ?? "";
  if (role === "quarantine" || (role === "" && /quarantine/.test(q.logicalName))) return "quarantine";
  if (role === "dlq" || (role === "" && /dlq|dead/.test(q.logicalName))) return "dlq";
  return "source";
}

const KIND_ORDER: SeriesKind[] = ["source", "dlq", "quarantine"];

/** `ingest` of `ingest-dlq`: the program names a part's queues after the part. */
function partOf(logicalName: string): string {
  return logicalName.split("-")[0] ?? logicalName;
}

function moved(values: Array<number | null>): boolean {
  const known = values.filter((v): v is number => v !== null);
  return known.length > 0 && Math.max(...known) !== Math.min(...known);
}

/** Seconds to one decimal: finer than the sampling would be noise, and it keeps the page small. */
function tenth(n: number): number {
  return Math.round(n * 10) / 10;
}

/** One scenario's timeline from the samples and events inside its window. Pure. */
function scenarioTimeline(input: ReportInput, window: ScenarioWindow, row: ScenarioSummary): ReportScenario {
  const end = window.endMs ?? window.startMs + row.wallMs;
  const simS = (realMs: number) => tenth(((Math.min(Math.max(realMs, window.startMs), end) - window.startMs) * input.meta.speed) / 1000);
  const inWindow = (ms: number) => ms >= window.startMs && ms <= end;
  const samples = input.recorded.samples.filter((s) => inWindow(s.realTimeMs));
  const { marks, timings } = timingMarks(row, simS);
  marks.push(...eventMarks(input, inWindow, simS));
  return {
    name: row.scenario,
    title: window.title,
    summary: row,
    durationS: simS(end),
    t: samples.map((s) => simS(s.realTimeMs)),
    queues: queueSeries(input.queues, window.queues, samples),
    activity: activitySeries(samples),
    marks,
    timings,
  };
}

/**
 * The scenario's queues, and those of its part (`ingest-…`, `fleet-…`) that moved: other parts'
 * schedules keep their queues busy in the background, and a queue an earlier scenario left
 * messages on stays flat, both noise here. Sources first, the scenario's own before its part's.
 */
function queueSeries(queues: readonly LocalQueue[], own: readonly string[], samples: readonly RecordedSample[]): ReportSeries[] {
  const parts = new Set(own.map(partOf));
  return queues
    .map((q) => ({ q, values: samples.map((s) => s.depths[q.logicalName] ?? null) }))
    .filter(({ q, values }) => own.includes(q.logicalName) || (parts.has(partOf(q.logicalName)) && moved(values)))
    .map(({ q, values }): ReportSeries => ({ label: q.logicalName, kind: queueKind(q), values }))
    .sort((a, b) => KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind) || Number(own.includes(b.label)) - Number(own.includes(a.label)));
}

/** The GPU's phase and deliveries, the fleet's capacity and the ECS tasks running: those that moved. */
function activitySeries(samples: readonly RecordedSample[]): ReportSeries[] {
  const activity: ReportSeries[] = [];
  const ifMoved = (label: string, kind: SeriesKind, read: (s: RecordedSample) => number | null) => {
    const values = samples.map(read);
    if (moved(values)) activity.push({ label, kind, values });
  };
  ifMoved("GPU", "gpu", (s) => (s.gpu ? GPU_PHASE_VALUE[s.gpu.phase] : null));
  const firstDelivered = samples.find((s) => s.gpu)?.gpu?.delivered ?? 0;
  const delivered = samples.map((s) => (s.gpu ? s.gpu.delivered - firstDelivered : null));
  if (delivered.some((v) => v !== null && v > 0)) activity.push({ label: "delivered to GPU", kind: "deliveries", values: delivered });
  // The GPU fleet: desired capacity and instances in service (the backlog is the ingest queues' series above;
  // its processed count is left out: thousands on the count axis would flatten a capacity of four).
  ifMoved("GPU desired capacity", "capacity", (s) => s.fleet?.desired ?? null);
  ifMoved("GPU instances in service", "capacity", (s) => s.fleet?.inService ?? null);
  ifMoved("ECS tasks running", "tasks", (s) => s.tasksRunning);
  return activity;
}

/** The key timings, numbered in order where they have a mark, and each numbered one's mark. */
function timingMarks(row: ScenarioSummary, simS: (realMs: number) => number): { marks: ReportMark[]; timings: ReportTiming[] } {
  const marks: ReportMark[] = [];
  const timings: ReportTiming[] = [];
  for (const [name, timing] of Object.entries(row.timings)) {
    const mark = row.marks?.[name];
    if (timing === null || mark === undefined) {
      timings.push({ name, timing });
      continue;
    }
    const n = marks.length + 1;
    timings.push({ n, name, timing });
    marks.push({ kind: "timing", label: String(n), atS: simS(mark.toMs), fromS: simS(mark.fromMs) });
  }
  return { marks, timings };
}

/** The GPU's starts and stops, and the alarms' firings and returns to OK, inside the window. */
function eventMarks(input: ReportInput, inWindow: (realMs: number) => boolean, simS: (realMs: number) => number): ReportMark[] {
  const marks: ReportMark[] = [];
  for (const e of input.recorded.events) if (inWindow(e.realTimeMs)) marks.push({ kind: "gpu", label: e.label, atS: simS(e.realTimeMs) });
  for (const a of input.alarms.alarms) {
    for (const f of a.firings) {
      // Firings are in simulated ms since the clock's start; the window is in real ms.
      const firedAt = input.clockT0Ms + f.atMs / input.meta.speed;
      if (inWindow(firedAt)) marks.push({ kind: "alarm", label: `ALARM ${a.logicalName}`, atS: simS(firedAt) });
      const okAt = f.okAtMs === undefined ? undefined : input.clockT0Ms + f.okAtMs / input.meta.speed;
      if (okAt !== undefined && inWindow(okAt)) marks.push({ kind: "alarm", label: `OK ${a.logicalName}`, atS: simS(okAt) });
    }
  }
  return marks;
}

/**
 * The report's data: one timeline per scenario that ran (a row without a recorded window, e.g.
 * from an older recorder, is left out), and the alarms that fired. Pure.
 */
export function buildReportData(input: ReportInput): ReportData {
  const windows = [...input.recorded.windows];
  const scenarios: ReportScenario[] = [];
  for (const row of input.rows) {
    // In run order: the same scenario may run twice, each run with its own window.
    const i = windows.findIndex((w) => w.name === row.scenario);
    const window = windows[i];
    if (window === undefined) continue;
    windows.splice(i, 1);
    scenarios.push(scenarioTimeline(input, window, row));
  }
  return {
    project: input.meta.project,
    stack: input.meta.stack,
    speed: input.meta.speed,
    wallMs: input.meta.wallMs,
    ok: input.rows.every(rowOk),
    generatedAt: input.meta.generatedAt.toISOString(),
    scenarios,
    alarms: input.alarms.alarms.flatMap((a) =>
      a.firings.map((f) => ({
        alarm: a.logicalName,
        ...(a.queue !== undefined ? { queue: a.queue } : {}),
        at: runTime(f.atMs),
        value: f.value,
        ...(a.threshold !== undefined ? { threshold: a.threshold } : {}),
        ...(f.okAtMs !== undefined ? { backToOk: runTime(f.okAtMs) } : {}),
      })),
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// The page

/**
 * The code and style inlined into the page, read from node_modules and from beside this file at
 * report time so the page carries them: uPlot's IIFE build (it defines the global `uPlot`) and
 * style, and ./report-page.js, which reads the embedded data and draws every chart.
 */
export function loadChartAssets() {
  const dist = path.dirname(require.resolve("uplot/dist/uPlot.iife.min.js"));
  return {
    chartJs: fs.readFileSync(path.join(dist, "uPlot.iife.min.js"), "utf8"),
    chartCss: fs.readFileSync(path.join(dist, "uPlot.min.css"), "utf8"),
    pageJs: fs.readFileSync(path.join(__dirname, "report-page.js"), "utf8"),
  };
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);
}

/** Code inlined in a raw-text element ends at the first `</script` or `</style`: refuse such code rather than break the page. */
function inline(tag: "script" | "style", code: string): string {
  if (new RegExp(`</${tag}`, "i").test(code)) throw new Error(`cannot inline code that contains </${tag}`);
  return `<${tag}>\n${code}\n</${tag}>`;
}

function badge(good: boolean): string {
  return `<span class="badge ${good ? "ok" : "fail"}">${good ? "ok" : "FAIL"}</span>`;
}

const STYLE = `
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --ok: #1a7f37; --fail: #d1242f; }
* { box-sizing: border-box; }
body { margin: 0 auto; padding: 20px 24px 40px; max-width: 1180px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--fg); background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 0 0 2px; }
.meta, .title, .counts { color: var(--muted); margin: 2px 0; }
table { border-collapse: collapse; margin: 10px 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 10px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; font-weight: 600; color: #fff; vertical-align: middle; }
.badge.ok { background: var(--ok); } .badge.fail { background: var(--fail); }
section.scenario { border-top: 2px solid var(--line); margin-top: 22px; padding-top: 14px; }
.chart { margin: 10px 0 4px; min-height: 60px; }
ol.timings { margin: 6px 0; padding-left: 0; list-style: none; }
ol.timings li { margin: 2px 0; }
.n { display: inline-block; min-width: 18px; padding: 0 5px; margin-right: 6px; border-radius: 9px; background: #6639ba; color: #fff; font-size: 12px; text-align: center; }
.n.none { background: var(--line); color: var(--muted); }
.sim { color: var(--muted); }
.failures { color: var(--fail); }
details { margin-top: 6px; color: var(--muted); }
pre { white-space: pre-wrap; font-size: 12px; }
.legend-note { color: var(--muted); font-size: 12px; margin: 0; }
`;

function totalsTable(data: ReportData): string {
  const head = SUMMARY_HEADERS.map((h) => `<th>${h}</th>`).join("");
  const rows = data.scenarios.map((s, i) => {
    const r = s.summary;
    return `<tr><td><a href="#scenario-${i}">${esc(s.name)}</a></td><td>${seconds(r.wallMs)}</td>${COUNT_KEYS.map((k) => `<td>${r[k]}</td>`).join("")}<td>${badge(rowOk(r))}</td></tr>`;
  });
  return `<table class="totals"><thead><tr>${head}</tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function alarmsBlock(data: ReportData): string {
  if (data.alarms.length === 0) return `<p class="meta">No alarm would have fired (computed from the queue-depth samples; moto evaluates none).</p>`;
  const rows = data.alarms.map(
    (a) =>
      `<tr><td>${esc(a.alarm)}</td><td>${esc(a.queue ?? "—")}</td><td>${esc(a.at)}</td><td>${a.value}${a.threshold === undefined ? "" : ` (threshold ${a.threshold})`}</td><td>${esc(a.backToOk ?? "still in ALARM")}</td></tr>`,
  );
  return `<h2>Alarms that would have fired</h2><table><thead><tr><th>alarm</th><th>queue</th><th>at (simulated)</th><th>value</th><th>back to OK</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function timingsList(s: ReportScenario): string {
  if (s.timings.length === 0) return "";
  const items = s.timings.map((t) => {
    const n = t.n === undefined ? `<span class="n none">–</span>` : `<span class="n">${t.n}</span>`;
    return `<li>${n}${esc(t.name)} <b>${esc(formatTiming(t.timing))}</b></li>`;
  });
  return `<ol class="timings">${items.join("")}</ol>`;
}

function scenarioSection(s: ReportScenario, i: number): string {
  const r = s.summary;
  const counts = `sent ${r.sent} · processed ${r.processed} · quarantined ${r.quarantined} · in DLQ ${r.inDlq} · remaining ${r.remaining} · lost ${r.lost} · wall ${seconds(r.wallMs)} (${Math.round(s.durationS)} sim s)`;
  const charts = [
    `<div class="chart" data-scenario-index="${i}" data-chart="queues"></div>`,
    ...(s.activity.length > 0 ? [`<div class="chart" data-scenario-index="${i}" data-chart="activity"></div>`] : []),
  ];
  const failures = r.failures.length > 0 ? `<ul class="failures">${r.failures.map((f) => `<li>${esc(f)}</li>`).join("")}</ul>` : "";
  const details = Object.keys(r.details).length > 0 ? `<details><summary>details</summary><pre>${esc(JSON.stringify(r.details, null, 2))}</pre></details>` : "";
  return [
    `<section class="scenario" id="scenario-${i}" data-scenario="${esc(s.name)}">`,
    `<h2>${esc(s.name)} ${badge(rowOk(r))}</h2>`,
    `<p class="title">${esc(s.title)}</p>`,
    `<p class="counts">${esc(counts)}</p>`,
    ...charts,
    `<p class="legend-note">Numbered lines are the key timings below (shaded from where each is measured); other lines are the GPU's starts and stops and alarms.</p>`,
    timingsList(s),
    failures,
    details,
    `</section>`,
  ].join("\n");
}

/**
 * The whole page: a summary table, the alarms, then one section per scenario whose charts the
 * inlined script draws from the embedded data. Pure: the same data and assets give the same page.
 */
export function renderReport(data: ReportData, assets = loadChartAssets()): string {
  const title = `${data.project} local run · ${data.stack}`;
  // `<` escaped: the data (scenario names, failure texts) must not end the script element it sits in.
  const json = JSON.stringify(data).replace(/</g, "\\u003c");
  const meta = `stack ${data.stack} · speed ${data.speed}× (one real second is ${data.speed} simulated seconds) · wall ${seconds(data.wallMs)} · written ${data.generatedAt}`;
  return [
    "<!doctype html>",
    `<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<title>${esc(title)}</title>`,
    inline("style", assets.chartCss),
    inline("style", STYLE),
    "</head>",
    `<body data-scenarios="${data.scenarios.length}">`,
    `<h1>${esc(title)} ${badge(data.ok)}</h1>`,
    `<p class="meta">${esc(meta)}</p>`,
    `<noscript><p class="failures">The charts are drawn by the page's script: enable JavaScript to see them.</p></noscript>`,
    totalsTable(data),
    alarmsBlock(data),
    ...data.scenarios.map(scenarioSection),
    `<script type="application/json" id="report-data">${json}</script>`,
    inline("script", assets.chartJs),
    inline("script", assets.pageJs),
    "</body></html>",
    "",
  ].join("\n");
}
