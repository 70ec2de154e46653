/** The chaos run's summary: the `--json` document (exactly the shape) and the readable table. */
import type { ChaosSummary, ConsumerTotals } from "./ledger";
import type { ChaosResult } from "./run";

/** `{ totals, byConsumer, faults }` and nothing else. */
export function summaryDocument(r: ChaosSummary): ChaosSummary {
  return { totals: r.totals, byConsumer: r.byConsumer, faults: r.faults };
}

const COLUMNS = ["sent", "processed", "quarantined", "inDlq", "remaining", "lost", "duplicateSideEffects", "leakedLocks"] as const;
const HEADERS = ["sent", "processed", "quarantined", "in DLQ", "remaining", "lost", "duplicates", "leaked"];

export function renderSummary(r: ChaosResult, run: { messages: number; faultRate: number; seed: number; speed: number }): string {
  const rows: string[][] = [["consumer", ...HEADERS]];
  for (const c of r.byConsumer) rows.push([c.consumer, ...COLUMNS.map((k) => String(c[k]))]);
  rows.push(["total", ...COLUMNS.map((k) => String(r.totals[k]))]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const table = rows.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ")).join("\n");
  const kinds = Object.entries(r.faults.byKind)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
  const lines = [
    `chaos run: ${run.messages} messages, fault rate ${run.faultRate}, seed ${run.seed}, speed ${run.speed}; ${(r.wallMs / 1000).toFixed(0)} s${r.settled ? "" : " (the queues did not drain in time)"}`,
    table,
    `faults injected: ${r.faults.injected} (${kinds})`,
    ...r.byConsumer.flatMap(problems),
    r.totals.lost + r.totals.duplicateSideEffects + r.totals.leakedLocks === 0 ? "nothing lost, duplicated or leaked" : "FAILED: something was lost, duplicated or leaked (exit 1)",
  ];
  return lines.join("\n");
}

function problems(c: ConsumerTotals): string[] {
  const out = c.lostExamples.map((l) => `  ${c.consumer}: lost ${l.key}: ${l.reason}`);
  if (c.duplicateSideEffects > 0) out.push(`  ${c.consumer}: ${c.duplicateSideEffects} duplicate side effect(s)`);
  if (c.leakedLocks > 0) out.push(`  ${c.consumer}: ${c.leakedLocks} leaked lock(s): ${JSON.stringify(c.details.leaked)}`);
  return out;
}
