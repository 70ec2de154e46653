/**
 * Stack isolation. Pulumi auto-names most resources with a random suffix, so two stacks of this
 * program never share those. What they could share are the names the program chooses itself and
 * the values a grant, a filter or a sweep keys on: the GPU's Name tag (its StartInstances grant and
 * tag scan), its instance-id parameter, the pool tag (RunInstances and StartInstances conditions),
 * the runner parameter path (termination and stale_ssm). Each of those carries the environment, so
 * dev and prod in one account and region neither collide nor reach into each other.
 *
 * Unset, each is derived from `encache:environment`; set, it must contain the environment as a
 * whole word (between `/`, `-`, `_`, `.` or `:`), and the plan fails naming the key otherwise.
 */
import { PRODUCT } from "../policy/contract";

/** A stack-scoped value's place in the stack config, and the name derived when it is unset. */
interface ScopedKey {
  path: readonly [string, ...string[]];
  derive(environment: string): string;
}

export const STACK_SCOPED_KEYS: readonly ScopedKey[] = [
  { path: ["gpu", "nameTag"], derive: (env) => `${PRODUCT}-gpu-worker-${env}` },
  { path: ["gpu", "instanceIdParameter"], derive: (env) => `/${PRODUCT}/${env}/gpu/instance_id` },
  { path: ["pool", "poolTag"], derive: (env) => `${PRODUCT}-warm-pool-${env}` },
  { path: ["fleet", "names", "runnerParameterPath"], derive: (env) => `/runs-fleet/${env}/runners` },
];

/** True when `environment` appears in `value` as a whole word. Pure. */
export function carriesEnvironment(value: string, environment: string): boolean {
  const escaped = environment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|[/_.:-])${escaped}($|[/_.:-])`).test(value);
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The raw config with every unset stack-scoped key derived from the environment. Runs before
 * validation, so the parts' schemas can require these keys. A raw value that is not an object, or
 * an environment that is not a string, is left for the schema to report. Pure: returns a copy.
 */
export function withStackScopedDefaults(raw: unknown): unknown {
  if (!isObject(raw) || typeof raw.environment !== "string") return raw;
  const environment = raw.environment;
  const out = structuredClone(raw);
  for (const key of STACK_SCOPED_KEYS) {
    let node: Json = out;
    let reachable = true;
    for (const segment of key.path.slice(0, -1)) {
      if (node[segment] === undefined) node[segment] = {};
      const next = node[segment];
      if (!isObject(next)) {
        reachable = false;
        break;
      }
      node = next;
    }
    const last = key.path[key.path.length - 1]!;
    if (reachable && node[last] === undefined) node[last] = key.derive(environment);
  }
  return out;
}

/** Each set stack-scoped value that does not carry the environment, with its path and the reason. Pure. */
export function stackScopeProblems(cfg: Json & { environment: string }): Array<{ path: string[]; message: string }> {
  const problems: Array<{ path: string[]; message: string }> = [];
  for (const key of STACK_SCOPED_KEYS) {
    let value: unknown = cfg;
    for (const segment of key.path) value = isObject(value) ? value[segment] : undefined;
    if (typeof value !== "string" || carriesEnvironment(value, cfg.environment)) continue;
    problems.push({
      path: [...key.path],
      message:
        `"${value}" must contain the environment "${cfg.environment}" as a word, so that two stacks in one account never share it ` +
        `(leave it unset for "${key.derive(cfg.environment)}")`,
    });
  }
  return problems;
}
