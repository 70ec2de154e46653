import { z } from "zod";
import { visibilityTimeoutProblem } from "../../policy/contract";

/** The five sizing values of a Lambda queue consumer, as every part's stack config spells them. */
export interface ConsumerSizing {
  /** Lambda timeout in seconds (1–900). */
  timeoutSeconds: number;
  /** Lambda memory in MB (128–10240). */
  memoryMb: number;
  /** SQS batch size (1–10000; above 10 needs a batching window). */
  batchSize: number;
  /** Batching window in seconds (0–300). */
  batchingWindowSeconds: number;
  /** Event source mapping maximum concurrency (2–1000): the bound on parallel invocations. */
  maxConcurrency: number;
}

/** Lambda's and the event source mapping's bounds on each sizing value. */
const SIZING = {
  timeoutSeconds: z.number().int().min(1).max(900),
  memoryMb: z.number().int().min(128).max(10_240),
  batchSize: z.number().int().min(1).max(10_000),
  batchingWindowSeconds: z.number().int().min(0).max(300),
  maxConcurrency: z.number().int().min(2).max(1000),
} satisfies Record<keyof ConsumerSizing, z.ZodNumber>;

/**
 * The one schema of a Lambda queue consumer's sizing, for every part's config block. `defaults` are
 * the part's own (the original system's, where it had them); a value without one is required.
 * A part narrows a field with `.extend` (ingest's DLQ consumer takes at most 10 records); the
 * checks across fields are `consumerIssues`, which every part's cross-field check calls.
 */
export function consumerSchema<const D extends Partial<ConsumerSizing> = Record<never, number>>(defaults: D = {} as D): z.ZodObject<ConsumerShape<D>> {
  const shape = Object.fromEntries(
    (Object.keys(SIZING) as (keyof ConsumerSizing)[]).map((key) => {
      const fallback = defaults[key];
      return [key, fallback === undefined ? SIZING[key] : SIZING[key].default(fallback)];
    }),
  );
  return z.object(shape) as unknown as z.ZodObject<ConsumerShape<D>>;
}

/** A field with a default is optional in the stack file; one without is required. */
type ConsumerShape<D> = { [K in keyof ConsumerSizing]: K extends keyof D ? z.ZodDefault<z.ZodNumber> : z.ZodNumber };

/** The five sizing fields a QueueConsumer takes, picked from a consumer's config block. Pure. */
export function consumerSizing(c: ConsumerSizing): ConsumerSizing {
  return {
    timeoutSeconds: c.timeoutSeconds,
    memoryMb: c.memoryMb,
    batchSize: c.batchSize,
    batchingWindowSeconds: c.batchingWindowSeconds,
    maxConcurrency: c.maxConcurrency,
  };
}

export interface ConfigIssue {
  path: Array<string | number>;
  message: string;
}

/**
 * A consumer's checks across fields, in the stack schema's words: its queue's visibility covers it
 * (AWS's rule, `visibilityTimeoutProblem`), and a batch above 10 has a batching window. `key` is
 * the consumer's config path (`["window"]`, `["housekeeping"]`), `visibilityPath` its queue's
 * visibility key, `prefix` how messages name the consumer (`ingest.window`). Pure.
 */
export function consumerIssues(
  c: Pick<ConsumerSizing, "timeoutSeconds" | "batchingWindowSeconds" | "batchSize">,
  at: { key: Array<string | number>; visibilityPath: Array<string | number>; visibilityTimeoutSeconds: number; prefix: string },
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const visibility = visibilityTimeoutProblem(
    { visibilityTimeoutSeconds: at.visibilityTimeoutSeconds, timeoutSeconds: c.timeoutSeconds, batchingWindowSeconds: c.batchingWindowSeconds },
    { timeout: `${at.prefix}.timeoutSeconds`, batchingWindow: `${at.prefix}.batchingWindowSeconds` },
  );
  if (visibility) issues.push({ path: at.visibilityPath, message: visibility });
  if (c.batchSize > 10 && c.batchingWindowSeconds === 0)
    issues.push({ path: [...at.key, "batchingWindowSeconds"], message: "must be > 0 when batchSize is above 10 (Lambda rule)" });
  return issues;
}
