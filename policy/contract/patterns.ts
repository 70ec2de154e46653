/**
 * A retraining model name: what the launcher accepts in a message, and so what a stack may
 * schedule. 1–256 characters, starting with a letter or digit.
 */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9 _.:/=+@-]{0,255}$/;
export const MODEL_NAME_RULE = "1-256 characters of letters, digits, spaces or _.:/=+-@, starting with a letter or digit";

/** An EC2 instance type: `g5.xlarge`, `p4d.24xlarge`, `inf2.xlarge`… family, generation, options, a dot, a size. */
export const INSTANCE_TYPE_PATTERN = /^[a-z]+[0-9][a-z0-9-]*\.[0-9]*(nano|micro|small|medium|large|xlarge|metal(-[0-9]+xl)?)$/;

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
