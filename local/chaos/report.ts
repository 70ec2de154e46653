/** The chaos run's summary: the `--json` document and the readable tables, per seed and in total. */
import { type ChaosSummary, type ConsumerTotals, failed, sumTotals, type Totals } from "./ledger";
import type { FaultKind } from "./fault-proxy";
import type { ChaosResult } from "./run";

/** One seed's `{ totals, byConsumer, faults }` and nothing else. */
export function summaryDocument(r: ChaosSummary): ChaosSummary {
  return { totals: r.totals, byConsumer: r.byConsumer, faults: r.faults };
}

/** One seed's run, as the `--json` document lists it. */
export type SeedRun = { seed: number; wallMs: number; settled: boolean } & ChaosSummary;

export function seedRun(seed: number, result: ChaosResult): SeedRun {
  return { seed, wallMs: result.wallMs, settled: result.settled, ...summaryDocument(result) };
}

export interface RunsDocument {
  /** Every seed's totals added up. */
  totals: Totals;
  faults: ChaosSummary["faults"];
  seeds: SeedRun[];
}

/** Pure: the `--json` document of a run over several seeds (one seed is a run of one). */
export function runsDocument(runs: readonly SeedRun[]): RunsDocument {
  const byKind = {} as Record<FaultKind, number>;
  const kills: Record<string, number> = {};
  for (const r of runs) for (const [k, n] of Object.entries(r.faults.byKind) as Array<[FaultKind, number]>) byKind[k] = (byKind[k] ?? 0) + n;
  for (const r of runs) for (const [caller, n] of Object.entries(r.faults.kills ?? {})) kills[caller] = (kills[caller] ?? 0) + n;
  return {
    totals: sumTotals(runs.map((r) => r.totals)),
    faults: { injected: runs.reduce((n, r) => n + r.faults.injected, 0), byKind, kills },
    seeds: [...runs],
  };
}

/**
 * Exit 1 when any seed lost, duplicated or leaked anything, or ran a worker job twice; and when a
 * seed's queues did not drain within its settle time. Such a seed judged only part of its traffic
 * (its `remaining` messages were never judged), so it proves nothing about them: inconclusive is not
 * a pass. A loaded machine drains slower; raise --settle-seconds there.
 */
export function anyFailed(runs: readonly Pick<SeedRun, "settled" | "totals">[]): boolean {
  return runs.some((r) => failed(r.totals) || !r.settled);
}

/** The tables' columns: each count and its header. */
const COLUMNS: Array<[keyof Totals, string]> = [
  ["sent", "sent"],
  ["processed", "processed"],
  ["quarantined", "quarantined"],
  ["inDlq", "in DLQ"],
  ["remaining", "remaining"],
  ["expired", "expired"],
  ["lost", "lost"],
  ["duplicateSideEffects", "duplicates"],
  ["duplicatesFromFaults", "of which faults"],
  ["kills", "kills"],
  ["crashExtras", "crash extras"],
  ["crashBound", "crash bound"],
  ["crashOverBound", "over bound"],
  ["leakedLocks", "leaked locks"],
  ["jobsRunMoreThanOnce", "run >1"],
  ["jobsCompletedMoreThanOnce", "done >1"],
  ["leakedLeases", "leaked leases"],
  ["leakedKeyClaims", "leaked claims"],
];
const HEADERS = COLUMNS.map(([, header]) => header);
const cells = (t: Totals) => COLUMNS.map(([k]) => String(t[k]));

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ")).join("\n");
}

/** `name n, name n` */
const listed = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([name, n]) => `${name} ${n}`)
    .join(", ");

const verdict = (t: Totals, settled: boolean) =>
  failed(t)
    ? "FAILED: something was lost, duplicated (beyond a crash's bound) or leaked, or a worker job ran twice (exit 1)"
    : !settled
      ? `INCONCLUSIVE: the queues did not drain within the settle time; ${t.remaining} message(s) were never judged (exit 1; raise --settle-seconds on a loaded machine)`
      : "nothing lost, duplicated or leaked, no worker job run twice";

export function renderSummary(r: ChaosResult, run: { messages: number; faultRate: number; crashRate?: number; seed: number; speed: number }): string {
  const rows: string[][] = [["consumer", ...HEADERS]];
  for (const c of r.byConsumer) rows.push([c.consumer, ...cells(c)]);
  rows.push(["total", ...cells(r.totals)]);
  const kills = r.faults.kills ?? {};
  const lines = [
    `chaos run: ${run.messages} messages, fault rate ${run.faultRate}, crash rate ${run.crashRate ?? 0}, seed ${run.seed}, speed ${run.speed}; ${(r.wallMs / 1000).toFixed(0)} s${r.settled ? "" : " (the queues did not drain in time)"}`,
    table(rows),
    `faults injected: ${r.faults.injected} (${listed(r.faults.byKind)})`,
    `processes killed: ${Object.values(kills).reduce((a, b) => a + b, 0)} (${listed(kills) || "none"})`,
    ...r.byConsumer.flatMap(problems),
    verdict(r.totals, r.settled),
  ];
  return lines.join("\n");
}

/** The per-seed table and the total over seeds. */
export function renderSeeds(runs: readonly SeedRun[], run: { messages: number; faultRate: number; crashRate?: number; speed: number }): string {
  const rows: string[][] = [["seed", ...HEADERS, "faults", "wall s"]];
  for (const r of runs) rows.push([String(r.seed), ...cells(r.totals), String(r.faults.injected), (r.wallMs / 1000).toFixed(0)]);
  const doc = runsDocument(runs);
  const settled = runs.every((r) => r.settled);
  rows.push(["total", ...cells(doc.totals), String(doc.faults.injected), (runs.reduce((n, r) => n + r.wallMs, 0) / 1000).toFixed(0)]);
  return [
    `chaos runs: ${runs.length} seed(s), ${run.messages} messages each, fault rate ${run.faultRate}, crash rate ${run.crashRate ?? 0}, speed ${run.speed}`,
    table(rows),
    verdict(doc.totals, settled),
  ].join("\n");
}

function problems(c: ConsumerTotals): string[] {
  const out = c.lostExamples.map((l) => `  ${c.consumer}: lost ${l.key}: ${l.reason}`);
  if (c.duplicateSideEffects > 0)
    out.push(`  ${c.consumer}: ${c.duplicateSideEffects} duplicate side effect(s) no crash explains (${c.duplicatesFromFaults} touched by an injected fault)`);
  if (c.crashOverBound > 0)
    out.push(
      `  ${c.consumer}: ${c.crashOverBound} crash-caused extra effect(s) beyond the part's bound: ${JSON.stringify([
        ...((c.details.crashOverExamples as unknown[] | undefined) ?? []),
        ...((c.details.crashRunsOverBound as unknown[] | undefined) ?? []),
      ])}`,
    );
  if (c.leakedKeyClaims > 0) out.push(`  ${c.consumer}: ${c.leakedKeyClaims} GPU key claim(s) still held: ${JSON.stringify(c.details.keyClaimsHeld)}`);
  if (c.leakedLocks > 0) out.push(`  ${c.consumer}: ${c.leakedLocks} leaked lock(s): ${JSON.stringify(c.details.leaked)}`);
  if (c.jobsRunMoreThanOnce > 0) out.push(`  ${c.consumer}: ${c.jobsRunMoreThanOnce} job(s) run more than once: ${JSON.stringify(c.details.runTwiceExamples)}`);
  if (c.jobsCompletedMoreThanOnce > 0) out.push(`  ${c.consumer}: ${c.jobsCompletedMoreThanOnce} job(s) completed more than once`);
  if (c.leakedLeases > 0) out.push(`  ${c.consumer}: ${c.leakedLeases} leaked lease(s): ${JSON.stringify(c.details.leakedExamples)}`);
  return out;
}
