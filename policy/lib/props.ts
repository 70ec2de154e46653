/**
 * Narrowing helpers for policy props. @pulumi/policy types props as Record<string, any>; reading
 * them through these keeps `any` from leaking into rule logic. Every read still goes through the
 * unknownCheckingProxy, so an unknown value throws and the engine reports "can't run during preview".
 */

export type Props = Readonly<Record<string, unknown>>;

export function isRecord(value: unknown): value is Props {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A number input; numeric strings are accepted because the engine may hand back strings after Check. */
export function numberOr(value: unknown, fallback: number): number {
  if (value === undefined || value === null || value === "") return fallback;
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n)) throw new Error(`expected a number, got ${JSON.stringify(value)}`);
  return n;
}

export function stringList(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  return [];
}

export function records(value: unknown): Props[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

/**
 * The @pulumi/policy UnknownValueError, recognised by shape: the pack and the offline plan may
 * load different copies of @pulumi/policy, so `instanceof` is not reliable across them.
 */
export function isUnknownValueError(e: unknown): e is Error & { props: unknown[] } {
  return e instanceof Error && "unknownTypeSentinel" in e && Array.isArray((e as { props?: unknown }).props);
}

/**
 * Reads a value that a rule may legitimately skip when it is not yet known (e.g. a redrive policy
 * string built from an ARN on a first preview). Use only where skipping is the documented rule.
 */
export function readIfKnown<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (e) {
    if (isUnknownValueError(e)) return undefined;
    throw e;
  }
}

/**
 * The known elements of an IAM-style "one value or a list" field (a statement's Resource or
 * Action), read by index so that an element unknown on this preview is skipped instead of
 * throwing: iterating (`some`, `filter`, spread) hands every element over, and the engine's proxy
 * throws on the unknown one. A field unknown as a whole has no known element.
 */
export function knownElements(read: () => unknown): unknown[] {
  const value = readIfKnown(read);
  if (!Array.isArray(value)) return value === undefined ? [] : [value];
  const out: unknown[] = [];
  for (let i = 0; i < value.length; i += 1) {
    const element = readIfKnown((): unknown => value[i]);
    if (element !== undefined) out.push(element);
  }
  return out;
}
