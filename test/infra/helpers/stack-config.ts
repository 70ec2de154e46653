import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { REPO_ROOT } from "../../../infra/bundle";
import { parseStackConfig, StackConfigError } from "../../../infra/config";
import { withStackScopedDefaults } from "../../../infra/stack-scope";

/** A committed stack's config as the program sees it (unqualified `encache:` keys), to mutate in tests. */
export function stackConfig(stack: string): Record<string, unknown> {
  const doc = parse(fs.readFileSync(path.join(REPO_ROOT, `Pulumi.${stack}.yaml`), "utf8")) as { config: Record<string, unknown> };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc.config)) if (k.startsWith("encache:")) out[k.slice("encache:".length)] = v;
  return out;
}

/**
 * A committed stack's config with the stack-scoped names derived (infra/stack-scope.ts), as the
 * parts' own schemas receive it: for tests that parse one part's slice.
 */
export function scopedStackConfig(stack: string): Record<string, unknown> {
  return withStackScopedDefaults(stackConfig(stack)) as Record<string, unknown>;
}

/** The GPU capacity mode a committed stack's file chooses (`encache:gpu.capacity.mode`; `instance` when it says nothing, as the schema's default). */
export function gpuMode(stack: string): "instance" | "fleet" {
  const gpu = stackConfig(stack).gpu as { capacity?: { mode?: "instance" | "fleet" } } | undefined;
  return gpu?.capacity?.mode ?? "instance";
}

/** The dev stack's config (see stackConfig). */
export function devConfig(): Record<string, unknown> {
  return stackConfig("dev");
}

/** The error the program's config check throws for `raw`; fails the test when it accepts it. */
export function configError(raw: unknown): StackConfigError {
  try {
    parseStackConfig(raw);
  } catch (err) {
    if (err instanceof StackConfigError) return err;
    throw err;
  }
  throw new Error("expected the config to be rejected");
}

/** Every `key: reason` the config check reports for `raw`; empty when it accepts it. */
export function configIssues(raw: unknown): string[] {
  try {
    parseStackConfig(raw);
    return [];
  } catch (err) {
    if (err instanceof StackConfigError) return err.issues.map((i) => `${i.key}: ${i.reason}`);
    throw err;
  }
}

/** Sets `value` at a dotted path in a deep copy, creating missing objects on the way; `undefined` deletes the key. */
export function withValue(config: Record<string, unknown>, dotted: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(config);
  const keys = dotted.split(".");
  let node = copy as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) node = (node[k] ??= {}) as Record<string, unknown>;
  const last = keys[keys.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}
