/**
 * EventBridge Scheduler's schedule expressions, evaluated locally (moto stores schedules but
 * never fires them): `rate(value unit)`, `cron(min hour dom month dow year)` and
 * `at(yyyy-mm-ddThh:mm:ss)`.
 *
 * Times are UTC only: the program's schedules use the default `UTC` time zone, and a local run
 * has no reason to model daylight-saving gaps. The cron grammar is the one in the EventBridge
 * cron reference: `, - * / ?` everywhere they are allowed, plus `L` and `W` in day-of-month and
 * `L` and `#` in day-of-week. Anything else is rejected with an error naming the expression, so
 * a typo fails at start-up instead of silently never firing.
 *
 * Kept rather than a library (issue 40, checked 2026-11-29). aws-cron-parser 1.1.12 (MIT, the one
 * npm package for AWS's six-field grammar) fails this file's tests: `cron(0 12 31 * ? *)` after
 * Feb 1 gives Mar 3 (Feb 31 rolled over) and `cron(0 0 29 FEB ? *)` gives Mar 1 2026, `LW` and a
 * day-of-week `L` throw "should not happen", and it refuses nothing by design ("cron is assumed
 * to be validated by AWS already", beemhq/aws-cron-parser#7), so `10-5`, `FOO` or `3#6` would
 * schedule silently. cron-parser (harrisiirak) reads Unix cron: no year field, no `?`, no `W`.
 */

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
const DAY_MS = 86_400_000;
const UNIT_MS: Record<string, number> = { minute: MINUTE_MS, hour: 60 * MINUTE_MS, day: DAY_MS };

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
    const matcher = parseCron(expr, cron[1]);
    return { kind: "cron", next: (after) => nextCronTime(matcher, after) };
  }
  throw new ScheduleExpressionError(expr, "expected rate(value unit), cron(6 fields) or at(yyyy-mm-ddThh:mm:ss)");
}

// ---- cron ----

interface Field {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** Wildcards beyond `,` `-` `*` that the EventBridge reference allows in this field. */
  slash: boolean;
}

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const WEEKDAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

const FIELDS = {
  minutes: { name: "minutes", min: 0, max: 59, slash: true },
  hours: { name: "hours", min: 0, max: 23, slash: true },
  dayOfMonth: { name: "day-of-month", min: 1, max: 31, slash: true },
  month: { name: "month", min: 1, max: 12, names: MONTHS, slash: true },
  // 1 = SUN … 7 = SAT, as in the EventBridge reference.
  dayOfWeek: { name: "day-of-week", min: 1, max: 7, names: WEEKDAYS, slash: false },
  year: { name: "year", min: 1970, max: 2199, slash: true },
} satisfies Record<string, Field>;

/** Tests one calendar day (UTC) against the day-of-month or day-of-week field. */
type DayTest = (year: number, month: number, day: number) => boolean;

interface CronMatcher {
  minutes: number[];
  hours: number[];
  months: Set<number>;
  years: Set<number>;
  maxYear: number;
  day: DayTest;
}

function parseCron(expr: string, body: string): CronMatcher {
  const parts = body.trim().split(/\s+/);
  if (parts.length !== 6)
    throw new ScheduleExpressionError(expr, `a cron expression has 6 fields (minutes hours day-of-month month day-of-week year), got ${parts.length}`);
  const [min, hour, dom, mon, dow, year] = parts;
  const fail = (reason: string): never => {
    throw new ScheduleExpressionError(expr, reason);
  };
  // EventBridge: a value or * in one of the day fields needs ? in the other.
  if ((dom === "?") === (dow === "?")) fail("exactly one of day-of-month and day-of-week must be ?");
  if ([min, hour, mon, year].includes("?")) fail("? is only allowed in day-of-month or day-of-week");
  const years = parseList(FIELDS.year, year, fail);
  return {
    minutes: [...parseList(FIELDS.minutes, min, fail)].sort((a, b) => a - b),
    hours: [...parseList(FIELDS.hours, hour, fail)].sort((a, b) => a - b),
    months: parseList(FIELDS.month, mon, fail),
    years,
    maxYear: Math.max(...years),
    day: dom === "?" ? parseDayOfWeek(dow, fail) : parseDayOfMonth(dom, fail),
  };
}

/** `*`, numbers or names, `a-b` ranges and `x/step` steps, separated by commas. */
function parseList(field: Field, text: string, fail: (reason: string) => never): Set<number> {
  const values = new Set<number>();
  for (const item of text.split(",")) {
    const [range, stepText, extra] = item.split("/");
    if (extra !== undefined) fail(`${field.name}: "${item}" has more than one /`);
    if (stepText !== undefined && !field.slash) fail(`${field.name}: / is not allowed in this field`);
    const step = stepText === undefined ? 1 : parseNumber(field, stepText, fail, { step: true });
    let from: number;
    let to: number;
    if (range === "*") [from, to] = [field.min, field.max];
    else if (range.includes("-")) {
      const [a, b] = range.split("-");
      [from, to] = [parseValue(field, a, fail), parseValue(field, b, fail)];
      if (from > to) fail(`${field.name}: range "${range}" runs backwards (wrap-around ranges are not supported)`);
    } else {
      from = parseValue(field, range, fail);
      // `5/15` means from 5 to the end of the field, every 15.
      to = stepText === undefined ? from : field.max;
    }
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return values;
}

function parseValue(field: Field, text: string, fail: (reason: string) => never): number {
  const index = field.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index >= 0) return field.min + index;
  return parseNumber(field, text, fail);
}

function parseNumber(field: Field, text: string, fail: (reason: string) => never, opts: { step?: boolean } = {}): number {
  if (!/^\d+$/.test(text)) fail(`${field.name}: "${text}" is not a number${field.names ? " or a name" : ""}`);
  const n = Number(text);
  if (opts.step) {
    if (n < 1) fail(`${field.name}: a step must be at least 1`);
    return n;
  }
  if (n < field.min || n > field.max) fail(`${field.name}: ${n} is outside ${field.min}-${field.max}`);
  return n;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** 1 = Sunday … 7 = Saturday. */
function weekday(year: number, month: number, day: number): number {
  return new Date(Date.UTC(year, month - 1, day)).getUTCDay() + 1;
}

function parseDayOfMonth(text: string, fail: (reason: string) => never): DayTest {
  const field = FIELDS.dayOfMonth;
  if (text === "L") return (y, m, d) => d === daysInMonth(y, m);
  if (text === "LW") return (y, m, d) => d === nearestWeekday(y, m, daysInMonth(y, m));
  const w = /^(\d+)W$/.exec(text);
  if (w) {
    const target = parseNumber(field, w[1], fail);
    return (y, m, d) => target <= daysInMonth(y, m) && d === nearestWeekday(y, m, target);
  }
  if (/[LW#]/.test(text)) fail(`day-of-month: "${text}" is not supported (L, LW and nW must stand alone)`);
  const days = parseList(field, text, fail);
  return (_y, _m, d) => days.has(d);
}

/** The weekday (Mon–Fri) nearest to `target`, without leaving the month, as Quartz and EventBridge define `W`. */
function nearestWeekday(year: number, month: number, target: number): number {
  const wd = weekday(year, month, target);
  if (wd === 7) return target === 1 ? 3 : target - 1; // Saturday → Friday, or Monday the 3rd
  if (wd === 1) return target === daysInMonth(year, month) ? target - 2 : target + 1; // Sunday → Monday, or Friday
  return target;
}

function parseDayOfWeek(text: string, fail: (reason: string) => never): DayTest {
  const field = FIELDS.dayOfWeek;
  if (text === "L") return (y, m, d) => weekday(y, m, d) === 7; // the last day of the week: Saturday
  const last = /^(\w+)L$/.exec(text);
  if (last) {
    const wd = parseValue(field, last[1], fail);
    return (y, m, d) => weekday(y, m, d) === wd && d + 7 > daysInMonth(y, m);
  }
  const nth = /^(\w+)#(\d+)$/.exec(text);
  if (nth) {
    const wd = parseValue(field, nth[1], fail);
    const n = Number(nth[2]);
    if (n < 1 || n > 5) fail(`day-of-week: "${text}": the week of the month must be 1-5`);
    return (y, m, d) => weekday(y, m, d) === wd && Math.ceil(d / 7) === n;
  }
  if (/[L#]/.test(text)) fail(`day-of-week: "${text}" is not supported (nL and n#k must stand alone)`);
  const days = parseList(field, text, fail);
  return (y, m, d) => days.has(weekday(y, m, d));
}

function nextCronTime(c: CronMatcher, after: Date): Date | null {
  // Scheduler has minute precision: the first candidate is the next whole minute.
  const start = new Date(Math.floor(after.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS);
  const startDay = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate());
  for (let dayMs = startDay; ; dayMs += DAY_MS) {
    const date = new Date(dayMs);
    const [y, m, d] = [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate()];
    if (y > c.maxYear) return null;
    if (!c.years.has(y) || !c.months.has(m) || !c.day(y, m, d)) continue;
    for (const h of c.hours) {
      for (const min of c.minutes) {
        const t = dayMs + h * 3_600_000 + min * MINUTE_MS;
        if (t >= start.getTime()) return new Date(t);
      }
    }
  }
}
