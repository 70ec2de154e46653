/**
 * The end of the local run (`npm start`): the summary table, each scenario's timings, details and
 * failures, the `--json` document, and the block of alarms that would have fired.
 */
import { alarmValue, OPERATORS, runTime } from "../observe/alarm-eval";
import type { AlarmOutcome, AlarmReport } from "../observe/alarm-watch";
import { clean, padEnd, padStart, paint, seconds, type Style, widthOf } from "./text";
import type { MessageCounts as Totals, ScenarioSummary, Timing } from "./view";

export const COUNT_KEYS = ["sent", "processed", "quarantined", "inDlq", "remaining", "lost"] as const;
/** The summary table's columns, the HTML report's too. */
export const SUMMARY_HEADERS = ["scenario", "wall", "sent", "processed", "quarantined", "in DLQ", "remaining", "lost", "result"];

/** No message lost and every expectation held. */
export function rowOk(r: ScenarioSummary): boolean {
  return r.lost === 0 && r.failures.length === 0;
}

function totalsOf(rows: ScenarioSummary[]): Totals {
  const t: Totals = { sent: 0, processed: 0, quarantined: 0, inDlq: 0, remaining: 0, lost: 0 };
  for (const r of rows) for (const k of COUNT_KEYS) t[k] += r[k];
  return t;
}

/** `2.6s (156 sim s)`: what a person waited, then what the platform lived through at the run's speed. */
export function formatTiming(t: Timing | null): string {
  return t === null ? "—" : `${seconds(t.wallMs)} (${Math.round(t.simulatedSeconds)} sim s)`;
}

function formatDetail(value: unknown): string {
  return typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
}

/**
 * The end-of-run table (one row per scenario and a totals row), then each scenario's key timings
 * (wall and simulated), details and failures. Box drawing only, so it stays readable in a plain log; colours when asked.
 */
export function renderSummaryTable(rows: ScenarioSummary[], opts: { color: boolean }): string {
  const headers = SUMMARY_HEADERS;
  const cell = (r: Pick<ScenarioSummary, "wallMs"> & Totals, name: string, ok: boolean): string[] => [
    name,
    seconds(r.wallMs),
    ...COUNT_KEYS.map((k) => String(r[k])),
    ok ? "ok" : "FAIL",
  ];
  const body = rows.map((r) => ({ cells: cell(r, clean(r.scenario), rowOk(r)), lost: r.lost, ok: rowOk(r) }));
  const totals = { ...totalsOf(rows), wallMs: rows.reduce((n, r) => n + r.wallMs, 0) };
  const allOk = rows.every(rowOk);
  const total = { cells: cell(totals, "total", allOk), lost: totals.lost, ok: allOk };
  const widths = headers.map((h, i) => Math.max(widthOf(h), ...[...body, total].map((r) => widthOf(r.cells[i] ?? ""))));

  const rule = (l: string, m: string, r: string) => l + widths.map((w) => "─".repeat(w + 2)).join(m) + r;
  const LOST = headers.indexOf("lost");
  const RESULT = headers.indexOf("result");
  // `verdict` is absent for the header row, which is never coloured.
  const line = (cells: string[], verdict?: { lost: number; ok: boolean }): string =>
    "│" +
    cells
      .map((c, i) => {
        const padded = i === 0 ? padEnd(c, widths[i] ?? 0) : padStart(c, widths[i] ?? 0);
        let style: Style | undefined;
        if (verdict && i === LOST && verdict.lost !== 0) style = "red";
        if (verdict && i === RESULT) style = verdict.ok ? "green" : "red";
        return ` ${paint([{ text: padded, style }], opts.color)} `;
      })
      .join("│") +
    "│";

  const out = [
    rule("┌", "┬", "┐"),
    line(headers.map((h, i) => (i === 0 ? h : padStart(h, widths[i] ?? 0)))),
    rule("├", "┼", "┤"),
    ...body.map((r) => line(r.cells, r)),
    rule("├", "┼", "┤"),
    line(total.cells, total),
    rule("└", "┴", "┘"),
  ];

  for (const r of rows) {
    out.push("", paint([{ text: clean(r.scenario), style: "bold" }, { text: ` (${seconds(r.wallMs)})` }], opts.color));
    const timings = Object.entries(r.timings);
    out.push(`  timings: ${timings.length > 0 ? timings.map(([k, v]) => `${clean(k)} ${formatTiming(v)}`).join(" · ") : "—"}`);
    const details = Object.entries(r.details);
    if (details.length > 0) out.push(`  details: ${details.map(([k, v]) => `${clean(k)} ${clean(formatDetail(v))}`).join(" · ")}`);
    if (r.failures.length > 0) {
      out.push(paint([{ text: "  failures:", style: "red" }], opts.color));
      for (const f of r.failures) out.push(paint([{ text: `    - ${clean(f)}`, style: "red" }], opts.color));
    }
  }
  return `${out.join("\n")}\n`;
}

/**
 * The `--json` document: the rows, their totals, the alarms, and `ok` (no row lost a message or
 * failed). A fired alarm does not make the run fail: scenarios quarantine messages on purpose.
 */
export function summaryDocument(meta: { project: string; stack: string; speed: number; wallMs: number }, rows: ScenarioSummary[], alarms: AlarmReport) {
  const { project, stack, speed, wallMs } = meta;
  return { project, stack, speed, wallMs, scenarios: rows, totals: totalsOf(rows), alarms, ok: rows.every(rowOk) };
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function notifiedCell(a: AlarmOutcome): string {
  const outside = a.unreachableActions.length > 0 ? ` (+${plural(a.unreachableActions.length, "action")} outside moto, not published)` : "";
  return `${a.notified.length > 0 ? a.notified.map(clean).join(", ") : "no topic in moto"}${outside}`;
}

/**
 * The block after the summary table: every time an alarm would have fired (alarm, queue, simulated
 * time since the run's start, the period's statistic against the threshold, the topics told, when
 * it went back to OK), then how many stayed OK, and any that the samples could not evaluate.
 */
export function renderAlarmReport(report: AlarmReport, opts: { color: boolean }): string {
  const out = ["alarms (computed from the run's metric samples; moto evaluates none)"];
  const headers = ["alarm", "queue", "at", "value", "notified", "back to OK"];
  const rows = report.alarms.flatMap((a) =>
    a.firings.map((f) => [
      clean(a.alarm),
      clean(a.queue ?? "—"),
      runTime(f.atMs),
      `${clean(a.statistic)} ${alarmValue(f.value)} ${OPERATORS[a.comparisonOperator]?.symbol ?? clean(a.comparisonOperator)} ${a.threshold === undefined ? "—" : alarmValue(a.threshold)}`,
      notifiedCell(a),
      f.okAtMs === undefined ? "still in ALARM" : runTime(f.okAtMs),
    ]),
  );
  if (rows.length === 0) {
    out.push("  no alarm would have fired");
  } else {
    const widths = headers.map((h, i) => Math.max(widthOf(h), ...rows.map((r) => widthOf(r[i] ?? ""))));
    const line = (cells: string[]) => `  ${cells.map((c, i) => (i === cells.length - 1 ? c : padEnd(c, widths[i] ?? 0))).join("  ")}`;
    out.push(paint([{ text: line(headers), style: "dim" }], opts.color));
    for (const r of rows) out.push(paint([{ text: line(r), style: "yellow" }], opts.color));
  }
  const evaluated = report.alarms.filter((a) => a.unsupported === undefined);
  const stayedOk = evaluated.filter((a) => a.firings.length === 0).length;
  const every =
    report.sampleEverySimMs === 60_000 ? "one round per simulated minute" : `one round per ${alarmValue(report.sampleEverySimMs / 60_000)} simulated minutes`;
  out.push(
    `  ${plural(stayedOk, "alarm")} stayed OK · ${plural(evaluated.length - stayedOk, "alarm")} fired · ` +
      `${plural(report.published, "message")} published to topics in moto · ${plural(report.samples, "sample")} (${every})`,
  );
  for (const a of report.alarms) {
    if (a.unsupported !== undefined) out.push(`  not evaluated: ${clean(a.alarm)}: ${clean(a.unsupported)}`);
  }
  return `${out.join("\n")}\n`;
}
