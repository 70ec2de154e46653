import { z } from "zod";

export class EnvConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid Lambda environment: ${problems.join("; ")}`);
    this.name = "EnvConfigError";
  }
}

type EnvShape = Record<string, z.ZodType>;

/**
 * Parses only the variables the schema names. An empty string counts as unset, because infra
 * tooling often renders "no value" as "" and a default should apply then.
 * Throws EnvConfigError whose message names every bad variable and why.
 */
export function parseEnv<S extends EnvShape>(shape: S, env: NodeJS.ProcessEnv): z.output<z.ZodObject<S>> {
  const picked: Record<string, string | undefined> = {};
  for (const name of Object.keys(shape)) {
    const value = env[name];
    picked[name] = value === "" ? undefined : value;
  }
  const result = z.object(shape).safeParse(picked);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const name = String(issue.path[0] ?? "(environment)");
    const raw = picked[name];
    return raw === undefined ? `${name} is required but not set` : `${name} is invalid (${issue.message}; got ${JSON.stringify(raw)})`;
  });
  throw new EnvConfigError(problems);
}

/** An integer env var within [min, max]; digits only, so "8080abc" or "1e3" are rejected. */
export function envInt(min: number, max: number) {
  return z
    .string()
    .regex(/^\d+$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min, `must be >= ${min}`).max(max, `must be <= ${max}`));
}

export function envUrl() {
  return z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });
}
