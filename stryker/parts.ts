/**
 * What `npm run mutate` measures: the function code, one part at a time, each with the mutation
 * score it must reach. Pure, so test/ci/mutation.test.ts checks it without running Stryker.
 */
export const PARTS = ["ingest", "retraining", "fleet", "worker", "pool", "shared"] as const;
export type Part = (typeof PARTS)[number];

/** The lowest mutation score (killed + timed out, over every valid mutant) a part may have. */
export const THRESHOLDS: Readonly<Record<Part, number>> = {
  ingest: 90,
  retraining: 90,
  fleet: 90,
  worker: 90,
  pool: 90,
  shared: 90,
};

/** `npm run mutate -- [part…]`: the parts named, in the order given, or every part. */
export function selectParts(args: readonly string[]): Part[] {
  if (args.length === 0) return [...PARTS];
  const unknown = args.filter((arg) => !(PARTS as readonly string[]).includes(arg));
  if (unknown.length > 0) {
    throw new Error(`unknown part ${unknown.map((u) => `"${u}"`).join(", ")}: expected one of ${PARTS.join(", ")}`);
  }
  return [...new Set(args)] as Part[];
}

/** The statuses Stryker gives a mutant (mutation-testing-report-schema's MutantStatus). */
export type MutantStatus = "Killed" | "Survived" | "NoCoverage" | "Timeout" | "CompileError" | "RuntimeError" | "Ignored" | "Pending";

export interface PartScore {
  readonly mutants: number;
  readonly killed: number;
  readonly survived: number;
  readonly noCoverage: number;
  readonly ignored: number;
  readonly errors: number;
  /** Detected over every valid mutant, as Stryker's "% Mutation score total". */
  readonly score: number;
  /** Detected over the mutants some test reached, as Stryker's "covered". */
  readonly coveredScore: number;
}

/**
 * Scores a run as Stryker does: a timeout counts as detected (the mutant hung the code); errors
 * and ignored mutants (the listed equivalents) are not valid and count for nothing.
 */
export function scoreOf(statuses: readonly MutantStatus[]): PartScore {
  const count = (...wanted: MutantStatus[]) => statuses.filter((s) => wanted.includes(s)).length;
  const detected = count("Killed", "Timeout");
  const survived = count("Survived");
  const noCoverage = count("NoCoverage");
  const percent = (n: number, of: number) => (of === 0 ? 100 : Math.floor((1000 * n) / of) / 10);
  return {
    mutants: statuses.length,
    killed: detected,
    survived,
    noCoverage,
    ignored: count("Ignored"),
    errors: count("CompileError", "RuntimeError"),
    score: percent(detected, detected + survived + noCoverage),
    coveredScore: percent(detected, detected + survived),
  };
}

/** The table `npm run mutate` prints at the end, in the shape of the issue's. */
export function scoreTable(rows: ReadonlyArray<{ part: Part; score: PartScore }>): string {
  const lines = ["| part | mutants | mutation score | on covered code | ignored (equivalent) | threshold | |", "|---|---:|---:|---:|---:|---:|---|"];
  for (const { part, score } of rows) {
    const ok = score.score >= THRESHOLDS[part];
    lines.push(
      `| ${part} | ${score.mutants} | ${score.score.toFixed(1)} % | ${score.coveredScore.toFixed(1)} % | ${score.ignored} | ${THRESHOLDS[part]} % | ${ok ? "ok" : "BELOW"} |`,
    );
  }
  return lines.join("\n");
}
