/**
 * The worker's job ledger as the chaos run judges it, pure: its run counts, leaked leases and runs
 * under crashes. The rules every consumer's messages share are ledger.ts.
 */
import type { CrashHits, CrashTotals } from "./ledger";

/**
 * The worker's job ledger (issue 25), as the chaos run reads it. Kept in one place: the ledger is
 * built beside this harness, and its names may still move.
 */
export const WORKER_LEDGER = {
  /** The table's logical name in the program. */
  table: "worker-jobs",
  /** Its partition key: the job id (or the message id of a job without one). */
  key: "job_key",
  /** The job id a key names (the identity today). */
  jobIdOf: (key: string): string => key,
  /** Log steps, compared with `-` and `_` alike. */
  steps: {
    started: "job_started",
    succeeded: "job_succeeded",
    leaseTaken: "job_lease_taken",
    alreadyCompleted: "job_already_completed",
    heldElsewhere: "job_held_elsewhere",
    /** With `at: "completion"`: the handler finished, but a newer holder had the lease (its completion refused). */
    leaseLost: "job_lease_lost",
  },
} as const;

/** One ledger item, as much of it as the counts need. */
export interface WorkerLedgerItem {
  jobKey: string;
  state: string;
  /** +1 each time a lease was taken to run the job (a run given back or failed is taken again). */
  runs?: number;
  holder?: string;
  /** Epoch ms; 0 once the holder released it (a failed job, a give-back). */
  leaseExpiresAt?: number;
}

export interface WorkerJobCounts {
  /** Jobs whose handler ran to its end more than once (a job interrupted, failed or given back and run again is expected). */
  jobsRunMoreThanOnce: number;
  /** Jobs whose success was logged more than once. */
  jobsCompletedMoreThanOnce: number;
  /** Ledger items still `running` once every worker message is accounted for. */
  leakedLeases: number;
  details: {
    ledgerTable: "present" | "absent";
    /** Items still `running` and not released (leaked only when every message is accounted for). */
    leasesRunning: number;
    leasesTaken: number;
    alreadyCompletedSkips: number;
    heldElsewhereSkips: number;
    /** Up to 10 jobs run more than once, with their runs. */
    runTwiceExamples: Array<{ job: string; runs: number }>;
    leakedExamples: Array<{ job: string; holder?: string }>;
  };
}

type StepLine = { step?: unknown; job_id?: unknown; at?: unknown };

/** A line's step, spelt with `_` (logs spell steps with `-` and `_` alike). */
const stepOf = (line: StepLine): string => (typeof line.step === "string" ? line.step.replace(/-/g, "_") : "");

/** Per job, its lines whose step passes `is`. */
function countJobs(lines: readonly StepLine[], is: (step: string, line: StepLine) => boolean): Map<string, number> {
  const m = new Map<string, number>();
  for (const l of lines) if (typeof l.job_id === "string" && is(stepOf(l), l)) m.set(l.job_id, (m.get(l.job_id) ?? 0) + 1);
  return m;
}

/**
 * Pure: the worker's run counts from its tasks' log lines and the ledger's items (undefined: no
 * table, so nothing can leak). A run counts when the job's handler ran to its end: a
 * `succeeded` line, or a `leaseLost` line at the completion (the handler finished, and a newer
 * holder's lease refused its completion). A job taken again after it was given back, failed or
 * lost its lease mid-run is expected, so the ledger's `runs` (every lease taken) is reported, not
 * judged. A leaked lease is an item still `running` and not released (`leaseExpiresAt` 0 is a
 * release), once every message is accounted for (`everyMessageAccounted`: no worker message
 * remains on its queue, so a lease still held has no job behind it), unless its holder was killed
 * and its lease has lapsed (`killed`: holder identities of killed tasks, and the time of the reading).
 */
export function workerJobCounts(
  lines: readonly StepLine[],
  ledger: readonly WorkerLedgerItem[] | undefined,
  everyMessageAccounted: boolean,
  killed: { holders: ReadonlySet<string>; nowMs: number } = { holders: new Set(), nowMs: 0 },
): WorkerJobCounts {
  const s = WORKER_LEDGER.steps;
  const leases = countJobs(lines, (step) => step === s.leaseTaken);
  const succeeded = countJobs(lines, (step) => step === s.succeeded);
  const finished = new Map(succeeded);
  for (const [job, n] of countJobs(lines, (step, l) => step === s.leaseLost && l.at === "completion")) finished.set(job, (finished.get(job) ?? 0) + n);
  const runTwice = [...finished].filter(([, n]) => n > 1);
  const running = (ledger ?? []).filter((i) => i.state === "running" && i.leaseExpiresAt !== 0);
  // A lease whose holder was killed (`--crash-rate`) is not released: it lapses at its expiry, and
  // only one still unexpired at the end is held past its time. Any other unreleased lease is leaked.
  const lapsed = (i: WorkerLedgerItem) => i.holder !== undefined && killed.holders.has(i.holder) && (i.leaseExpiresAt ?? 0) <= killed.nowMs;
  const leaked = everyMessageAccounted ? running.filter((i) => !lapsed(i)) : [];
  const leasesLogged = [...leases.values()].reduce((a, b) => a + b, 0);
  const leasesInLedger = (ledger ?? []).reduce((a, i) => a + (i.runs ?? 0), 0);
  return {
    jobsRunMoreThanOnce: runTwice.length,
    jobsCompletedMoreThanOnce: [...succeeded.values()].filter((n) => n > 1).length,
    leakedLeases: leaked.length,
    details: {
      ledgerTable: ledger === undefined ? "absent" : "present",
      leasesRunning: running.length,
      leasesTaken: Math.max(leasesLogged, leasesInLedger),
      alreadyCompletedSkips: lines.filter((l) => stepOf(l) === s.alreadyCompleted).length,
      heldElsewhereSkips: lines.filter((l) => stepOf(l) === s.heldElsewhere).length,
      runTwiceExamples: runTwice.slice(0, 10).map(([job, n]) => ({ job, runs: n })),
      leakedExamples: leaked.slice(0, 10).map((i) => ({ job: WORKER_LEDGER.jobIdOf(i.jobKey), ...(i.holder !== undefined ? { holder: i.holder } : {}) })),
    },
  };
}

/**
 * Pure: the worker's runs under crashes. A job whose holder was killed mid-job runs again: the
 * bound is runs ≤ 1 + holders killed holding it + the job's other interruptions (failed, given back,
 * lease lost mid-run, which are expected retries without any crash). `starts`: `job_started` lines
 * per job; `interruptions`: those other interruptions per job; `killed`: kills per job.
 */
export function workerCrashRuns(
  starts: ReadonlyMap<string, number>,
  interruptions: ReadonlyMap<string, number>,
  killed: ReadonlyMap<string, number>,
): CrashTotals & { over: Array<{ job: string; runs: number; killed: number; interruptions: number }> } {
  const out = { crashExtras: 0, crashBound: 0, crashOverBound: 0, over: [] as Array<{ job: string; runs: number; killed: number; interruptions: number }> };
  for (const [job, kills] of killed) {
    if (kills <= 0) continue;
    const runs = starts.get(job) ?? 0;
    const other = interruptions.get(job) ?? 0;
    const extra = Math.max(0, runs - 1 - other);
    out.crashExtras += extra;
    out.crashBound += kills;
    if (extra > kills) {
      out.crashOverBound += extra - kills;
      out.over.push({ job, runs, killed: kills, interruptions: other });
    }
  }
  return out;
}

/** Pure: per worker job, its runs (`job_started`) and its interruptions that are no crash's (failed, given back, lease lost mid-run). */
export function workerRunsByJob(lines: readonly StepLine[]): [Map<string, number>, Map<string, number>] {
  const { started, leaseLost } = WORKER_LEDGER.steps;
  const interrupted = (step: string, l: StepLine) => step === "job_failed" || step === "job_returned" || (step === leaseLost && l.at !== "completion");
  return [countJobs(lines, (step) => step === started), countJobs(lines, interrupted)];
}

/** Pure: per worker job, the worker tasks killed holding it. */
export const killedPerJob = (hits: ReadonlyMap<string, CrashHits>): Map<string, number> => new Map([...hits].map(([job, h]) => [job, h.processes]));

/**
 * Pure: worker jobs whose every run ended with its holder killed (`--crash-rate`): each lease taken
 * (`job_lease_taken`) matched by a kill of a task holding the job. Such a job's message reaches its
 * DLQ after maxReceiveCount receives for the crashes' sake, as a message whose every receive an
 * injected fault failed does: in the DLQ, not lost.
 */
export function workerJobsEveryRunKilled(lines: readonly StepLine[], killedPerJob: ReadonlyMap<string, number>): Set<string> {
  const takes = countJobs(lines, (step) => step === WORKER_LEDGER.steps.leaseTaken);
  return new Set([...takes].filter(([job, n]) => n > 0 && (killedPerJob.get(job) ?? 0) >= n).map(([job]) => job));
}
