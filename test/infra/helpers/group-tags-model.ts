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
