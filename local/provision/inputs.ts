/**
 * Typed readers for a resource's deserialized inputs: the mocks hand them over as `any`, with
 * pulumi-aws's camelCase names, some numbers and booleans as strings, and tags as maps. Each
 * reads from an absent object as from an empty one, so nested reads chain.
 */

export type Inputs = Record<string, unknown>;

/** Reads one input as T, or undefined when it is unset or not a T. */
export type Reader<T> = (o: Inputs | undefined, k: string) => T | undefined;

export const str: Reader<string> = (o, k) => (typeof o?.[k] === "string" && o[k] !== "" ? (o[k] as string) : undefined);

export const num: Reader<number> = (o, k) => {
  const v = o?.[k];
  if (typeof v === "number") return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return undefined;
};

/** Pulumi-aws takes some booleans as "true"/"false" strings (launch templates). */
export const bool: Reader<boolean> = (o, k) => {
  const v = o?.[k];
  if (typeof v === "boolean") return v;
  if (v === "true" || v === "false") return v === "true";
  return undefined;
};

export const obj: Reader<Inputs> = (o, k) => (typeof o?.[k] === "object" && o[k] !== null && !Array.isArray(o[k]) ? (o[k] as Inputs) : undefined);

export const objs = (o: Inputs | undefined, k: string): Inputs[] =>
  Array.isArray(o?.[k]) ? (o[k] as unknown[]).filter((x): x is Inputs => typeof x === "object" && x !== null) : [];

export const strs = (o: Inputs | undefined, k: string): string[] =>
  Array.isArray(o?.[k]) ? (o[k] as unknown[]).filter((x): x is string => typeof x === "string") : [];

export const tagMap = (o: Inputs | undefined, k = "tags"): Record<string, string> =>
  Object.fromEntries(Object.entries(obj(o, k) ?? {}).filter((e): e is [string, string] => typeof e[1] === "string"));

/** The `tags` map as the `{ Key, Value }` list that DynamoDB and SSM take (empty when none). */
export const keyValueTags = (o: Inputs): Array<{ Key: string; Value: string }> => Object.entries(tagMap(o)).map(([Key, Value]) => ({ Key, Value }));

/** A policy document input may be a JSON string or an object (pulumi-aws's PolicyDocument). */
export const policyText: Reader<string> = (o, k) => (typeof o?.[k] === "string" ? (o[k] as string) : o?.[k] ? JSON.stringify(o[k]) : undefined);

export const definedOnly = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/**
 * The named inputs, each read with `read`, under the AWS API's names: pulumi-aws's camelCase ones
 * with the first letter raised (`maxSessionDuration` → `MaxSessionDuration`). Unset ones are left out.
 */
export function pascal<T>(read: Reader<T>, o: Inputs | undefined, keys: readonly string[]): Record<string, T> {
  const out: Record<string, T> = {};
  for (const k of keys) {
    const v = read(o, k);
    if (v !== undefined) out[k.charAt(0).toUpperCase() + k.slice(1)] = v;
  }
  return out;
}
