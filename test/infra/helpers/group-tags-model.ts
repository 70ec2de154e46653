/** A tag of an Auto Scaling group as pulumi-aws declares it (the group's `tags` entries, a Tag's `tag`). */
export type GroupTag = { key: string; value: string; propagateAtLaunch?: boolean };

/**
 * A `pulumi refresh` and then an `up`, for an Auto Scaling group's tags, as the provider and the
 * engine do them: the provider's Read stores every tag the group has (its state and, for a bridged
 * provider, the old inputs); the engine keeps the old value of an ignored property; the provider's
 * Update deletes the keys the old tags have and the new ones lack, and writes the new ones; each
 * `aws.autoscaling.Tag` writes its one key. Returns the group's tags afterwards. Pure.
 */
export function refreshThenUp(
  live: Record<string, string>,
  declared: GroupTag[],
  ignoreChanges: readonly string[],
  tagResources: GroupTag[],
): Record<string, string> {
  const read: GroupTag[] = Object.entries(live).map(([key, value]) => ({ key, value, propagateAtLaunch: true }));
  const news = ignoreChanges.includes("tags") ? read : declared;
  const after = { ...live };
  const kept = new Set(news.map((t) => t.key));
  for (const t of read) if (!kept.has(t.key)) delete after[t.key];
  for (const t of news) after[t.key] = t.value;
  for (const t of tagResources) after[t.key] = t.value;
  return after;
}

/** The value at a dotted `ignoreChanges` path (`a.b.c`) of an object, or undefined. Pure. */
export function valueAt(value: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((v, key) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>)[key] : undefined), value);
}

/**
 * A `pulumi refresh` and then an `up`, for a resource's other inputs: the refresh reads the live
 * values into the state and the old inputs (a bridged provider); the engine gives each ignored path
 * its old value, where the old inputs have one, over the program's; the provider's Update writes
 * the result. Returns the inputs the resource has afterwards. Paths are dotted property paths, as
 * `ignoreChanges` spells them (lists, which it indexes, are not modelled). Pure.
 */
export function refreshThenUpInputs(
  live: Record<string, unknown>,
  declared: Record<string, unknown>,
  ignoreChanges: readonly string[],
): Record<string, unknown> {
  const after = structuredClone(declared);
  for (const path of ignoreChanges) {
    const old = valueAt(live, path);
    if (old === undefined) continue;
    const keys = path.split(".");
    let at: Record<string, unknown> = after;
    for (const key of keys.slice(0, -1)) {
      if (typeof at[key] !== "object" || at[key] === null) at[key] = {};
      at = at[key] as Record<string, unknown>;
    }
    at[keys.at(-1)!] = old;
  }
  return after;
}
