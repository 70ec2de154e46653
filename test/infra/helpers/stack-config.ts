import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { REPO_ROOT } from "../../../infra/bundle";

/** The dev stack's config as the program sees it (unqualified keys), to mutate in tests. */
export function devConfig(): Record<string, unknown> {
  const doc = parse(fs.readFileSync(path.join(REPO_ROOT, "Pulumi.dev.yaml"), "utf8")) as { config: Record<string, unknown> };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc.config)) if (k.startsWith("encache:")) out[k.slice("encache:".length)] = v;
  return out;
}

/** Sets `value` at a dotted path in a deep copy; `undefined` deletes the key. */
export function withValue(config: Record<string, unknown>, dotted: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(config);
  const keys = dotted.split(".");
  let node = copy as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>;
  const last = keys[keys.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}
