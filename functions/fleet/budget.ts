import type { Context } from "aws-lambda";

/**
 * How much of the invocation is left. Tasks check it between units of work and stop starting new
 * ones when it runs low; what they leave stays where it is (instances, parameters, items) and the
 * next scheduled run finds it again, so nothing is lost.
 */
export interface TimeBudget {
  /** True once less than the safety margin remains. */
  exhausted(): boolean;
}

/** Without a Lambda context (a local run), there is no deadline. */
export function budgetFrom(context: Pick<Context, "getRemainingTimeInMillis"> | undefined, marginMs: number): TimeBudget {
  if (!context) return { exhausted: () => false };
  return { exhausted: () => context.getRemainingTimeInMillis() < marginMs };
}

/** Splits a list into chunks of at most `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
