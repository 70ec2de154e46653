/**
 * EventBridge Scheduler's schedule expressions, evaluated locally (moto stores schedules but
 * never fires them): `rate(value unit)`, `cron(min hour dom month dow year)` and
 * `at(yyyy-mm-ddThh:mm:ss)`.
 *
 * Times are UTC only: the program's schedules use the default `UTC` time zone, and a local run
 * has no reason to model daylight-saving gaps. Anything the EventBridge cron reference does not
 * allow is rejected with an error naming the expression, so a typo fails at start-up instead of
 * silently never firing.
 *
 * The calendar is croner's (MIT, no dependencies, maintained): it reads Quartz's grammar, which is
 * EventBridge's, with the year field, `?`, `L`, `W` and `#`, weekdays 1 = SUN … 7 = SAT
 * (`alternativeWeekdays`), and passes the calendar tests of Feb 31, Feb 29 and `LW`. This file
 * only writes EventBridge's spellings in croner's (`5/15` → `5-59/15`, `6L` → `6#L`, `L` → `7`) and
 * keeps EventBridge's rules croner does not: the `?` pairing, years 1970–2199, no step in
 * day-of-week, and `L` or `#` standing alone. Checked on 2026-11-29, after aws-cron-parser 1.1.12
 * (wrong on Feb 31, Feb 29 and `LW`, and validates nothing) and cron-parser (no year, no `W`).
 */
import { Cron } from "croner";

export type ScheduleExpression =
  | { kind: "rate"; everyMs: number }
  /** `next(after)` is the first matching minute strictly after `after`, or null when none is left (the year field ran out). */
  | { kind: "cron"; next(after: Date): Date | null }
  | { kind: "at"; at: Date };

export class ScheduleExpressionError extends Error {
  constructor(expression: string, reason: string) {
    super(`unsupported schedule expression "${expression}": ${reason}`);
    this.name = "ScheduleExpressionError";
  }
}

const MINUTE_MS = 60_000;
const UNIT_MS: Record<string, number> = { minute: MINUTE_MS, hour: 60 * MINUTE_MS, day: 24 * 60 * MINUTE_MS };

export function parseScheduleExpression(expr: string): ScheduleExpression {
  const trimmed = expr.trim();
  const rate = /^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$/.exec(trimmed);
  if (rate) {
    const value = Number(rate[1]);
    if (value < 1) throw new ScheduleExpressionError(expr, "a rate must be at least 1");
    return { kind: "rate", everyMs: value * UNIT_MS[rate[2].replace(/s$/, "")] };
  }
  const at = /^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$/.exec(trimmed);
  if (at) {
    const date = new Date(`${at[1]}Z`);
    // An impossible date (2026-02-30) is invalid, or rolls over into the next month: the round trip catches both.
    if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 19) !== at[1]) throw new ScheduleExpressionError(expr, "not a valid date and time");
    return { kind: "at", at: date };
  }
  const cron = /^cron\((.*)\)$/.exec(trimmed);
  if (cron) {
    const fail = (reason: string): never => {
      throw new ScheduleExpressionError(expr, reason);
    };
    const calendar = croner(cron[1], fail);
    // Scheduler has minute precision, and croner's seconds field is pinned to 0.
    return { kind: "cron", next: (after) => calendar.nextRun(after) };
  }
  throw new ScheduleExpressionError(expr, "expected rate(value unit), cron(6 fields) or at(yyyy-mm-ddThh:mm:ss)");
}

/** Each field's name and range in the EventBridge reference. The largest value also spells `n/step` (from n to the field's end) as croner reads it, `n-max/step`. */
const FIELDS = [
  ["minutes", 0, 59],
  ["hours", 0, 23],
  ["day-of-month", 1, 31],
  ["month", 1, 12],
  ["day-of-week", 1, 7],
  ["year", 1970, 2199],
] as const;

/** Pure: an EventBridge cron body checked against EventBridge's rules and read by croner, or `fail` with the reason. */
function croner(body: string, fail: (reason: string) => never): Cron {
  const fields = body.trim().split(/\s+/);
  if (fields.length !== 6) fail(`a cron expression has 6 fields (minutes hours day-of-month month day-of-week year), got ${fields.length}`);
  const [min, hour, dom, mon, dow, year] = fields as [string, string, string, string, string, string];
  // EventBridge: a value or * in one of the day fields needs ? in the other.
  if ((dom === "?") === (dow === "?")) fail("exactly one of day-of-month and day-of-week must be ?");
  if ([min, hour, mon, year].includes("?")) fail("? is only allowed in day-of-month or day-of-week");
  if (dow.includes("/")) fail("day-of-week: / is not allowed");
  if (/[LW#]/.test(`${dom},${dow}`) && (dom.includes(",") || dow.includes(","))) fail("L, W and # must stand alone in their field");
  const spelled = fields.map((field, i) => {
    const [name, low, high] = FIELDS[i] ?? FIELDS[0];
    // Values, not steps (after /) or weeks of the month (after #): croner's own range errors are off by its offsets.
    for (const n of field.match(/(?<![/#\d])\d+/g) ?? []) if (Number(n) < low || Number(n) > high) fail(`${name}: ${n} is outside ${low}-${high}`);
    const from = field.replace(/^(\d+)\/(\d+)$/, (_, start: string, step: string) => `${start}-${high}/${step}`);
    return i === 4 ? (from === "L" ? "7" : from.replace(/^(\w+)L$/, "$1#L")) : from;
  });
  try {
    return new Cron(`0 ${spelled.join(" ")}`, { mode: "7-part", timezone: "UTC", alternativeWeekdays: true, paused: true });
  } catch (err) {
    return fail((err as Error).message);
  }
}
