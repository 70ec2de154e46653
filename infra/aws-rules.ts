/** AWS's own rules on what the program declares: Fargate task sizes and EventBridge Scheduler expressions. Pure. */

/**
 * Fargate's valid task sizes: CPU units → memory (MiB), as AWS's table lists them. 256 CPU takes
 * exactly 512, 1024 or 2048; every other size a range in steps.
 */
export const FARGATE_SIZES: Readonly<Record<number, { readonly min: number; readonly max: number; readonly step: number; readonly only?: readonly number[] }>> =
  {
    256: { min: 512, max: 2048, step: 512, only: [512, 1024, 2048] },
    512: { min: 1024, max: 4096, step: 1024 },
    1024: { min: 2048, max: 8192, step: 1024 },
    2048: { min: 4096, max: 16_384, step: 1024 },
    4096: { min: 8192, max: 30_720, step: 1024 },
    8192: { min: 16_384, max: 61_440, step: 4096 },
    16_384: { min: 32_768, max: 122_880, step: 8192 },
  };

/** The CPU units Fargate accepts, smallest first. */
export const FARGATE_CPU_UNITS: readonly number[] = Object.keys(FARGATE_SIZES).map(Number);

/** Why a CPU/memory pair is not a Fargate size, or undefined when it is. Pure. */
export function fargateSizeProblem(cpu: number, memoryMb: number): string | undefined {
  const size = FARGATE_SIZES[cpu];
  if (!size) return `cpu ${cpu} is not a Fargate size (${FARGATE_CPU_UNITS.join(", ")})`;
  if (size.only) return size.only.includes(memoryMb) ? undefined : `memory ${memoryMb} MiB does not fit cpu ${cpu}: one of ${size.only.join(", ")} MiB`;
  const ok = memoryMb >= size.min && memoryMb <= size.max && (memoryMb - size.min) % size.step === 0;
  return ok ? undefined : `memory ${memoryMb} MiB does not fit cpu ${cpu}: ${size.min}..${size.max} MiB in steps of ${size.step}`;
}

const RATE = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/;
const CRON = /^cron\((\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\)$/;
const AT = /^at\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\)$/;

/**
 * Why EventBridge Scheduler would refuse an expression, or undefined. A cron has six fields, and
 * exactly one of day-of-month and day-of-week is `?` (a value or `*` in one needs `?` in the
 * other). `at(…)` is a one-off, which recurring housekeeping does not allow. Pure.
 */
export function scheduleExpressionProblem(expression: string, options: { allowAt: boolean } = { allowAt: true }): string | undefined {
  const forms = options.allowAt ? "rate(N unit), cron(6 fields) or at(yyyy-mm-ddThh:mm:ss)" : "rate(N unit) or cron(6 fields)";
  const rate = RATE.exec(expression);
  if (rate) return Number(rate[1]) >= 1 ? undefined : "a rate must be at least 1";
  const cron = CRON.exec(expression);
  if (cron) {
    const [dayOfMonth, dayOfWeek] = [cron[3], cron[5]];
    if ((dayOfMonth === "?") === (dayOfWeek === "?")) return "a cron needs ? in exactly one of day-of-month and day-of-week, such as cron(0 3 * * ? *)";
    return undefined;
  }
  if (options.allowAt && AT.test(expression)) return undefined;
  return `must be ${forms}`;
}

/** EventBridge Scheduler's `ScheduleExpressionTimezone`: 1 to 50 characters (botocore's scheduler service-2.json). */
export const SCHEDULE_TIMEZONE_MAX_LENGTH = 50;

/**
 * Why EventBridge Scheduler would refuse a time zone, or undefined. It takes an IANA name (a zone or
 * one of IANA's links, such as US/Eastern), at most 50 characters, spelt as IANA spells it. The
 * runtime's ICU data says which names exist; ICU also matches them in any case (`europe/london`),
 * so the spelling is checked here: every part of an IANA name starts with a capital letter, and a
 * name that only differs from what ICU resolves it to in case is refused with the right spelling.
 * An offset (`+05:00`) is not a name. Pure.
 */
export function scheduleTimezoneProblem(timezone: string): string | undefined {
  if (timezone.length === 0) return "must not be empty: an IANA time zone such as UTC or Europe/London";
  if (timezone.length > SCHEDULE_TIMEZONE_MAX_LENGTH) return `must be at most ${SCHEDULE_TIMEZONE_MAX_LENGTH} characters (EventBridge Scheduler's limit)`;
  const resolved = resolvedTimezone(timezone);
  if (resolved === undefined) return `"${timezone}" is not an IANA time zone (such as UTC or Europe/London)`;
  const spelt = /^[A-Z][A-Za-z0-9_+-]*(\/[A-Z][A-Za-z0-9_+-]*)*$/.test(timezone);
  const caseOnly = resolved !== timezone && resolved.toLowerCase() === timezone.toLowerCase();
  if (!spelt || caseOnly) return `"${timezone}" is not spelt as IANA spells it; use ${resolved}`;
  return undefined;
}

/** The zone ICU resolves `timezone` to, or undefined when it knows no zone of that name. */
function resolvedTimezone(timezone: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(timezone)) return undefined;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}
