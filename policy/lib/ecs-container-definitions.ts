import { isRecord, readIfKnown, type Props } from "./props";

/**
 * `containerDefinitions` of an ECS task definition: pulumi-aws takes a JSON string, and the
 * engine may hand back the string or the parsed array. Reading an unknown value throws (the
 * engine then reports the rule can't run during preview), which is the documented behaviour.
 */
export function readContainerDefinitions(value: unknown, where: string): Props[] {
  let parsed: unknown = value;
  if (typeof value === "string") {
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new Error(`${where}: containerDefinitions is not valid JSON`);
    }
  }
  if (!Array.isArray(parsed)) throw new Error(`${where}: containerDefinitions is not a list`);
  return parsed.filter(isRecord);
}

/** `[{name, value}]` → `{name: value}`. */
export function containerEnvironment(container: Props): Record<string, string> {
  const env: unknown = container.environment;
  const out: Record<string, string> = {};
  if (!Array.isArray(env)) return out;
  for (const e of env) {
    if (!isRecord(e) || typeof e.name !== "string") continue;
    // A declared container's value may be an output, unknown on a first preview; its name is known.
    const value = readIfKnown(() => e.value);
    out[e.name] = typeof value === "string" ? value : "";
  }
  return out;
}

export function containerLabel(container: Props, index: number): string {
  return typeof container.name === "string" ? `'${container.name}'` : `#${index}`;
}
