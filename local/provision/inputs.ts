/**
 * Typed readers for a resource's deserialized inputs: the mocks hand them over as `any`, with
 * pulumi-aws's camelCase names, some numbers and booleans as strings, and tags as maps.
 */

export type Inputs = Record<string, unknown>;

export const str = (o: Inputs, k: string): string | undefined => (typeof o[k] === "string" && o[k] !== "" ? (o[k] as string) : undefined);

export const num = (o: Inputs, k: string): number | undefined => {
  const v = o[k];
  if (typeof v === "number") return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return undefined;
};

/** Pulumi-aws takes some booleans as "true"/"false" strings (launch templates). */
export const bool = (o: Inputs, k: string): boolean | undefined => {
  const v = o[k];
  if (typeof v === "boolean") return v;
  if (v === "true" || v === "false") return v === "true";
  return undefined;
};

export const obj = (o: Inputs, k: string): Inputs | undefined =>
  typeof o[k] === "object" && o[k] !== null && !Array.isArray(o[k]) ? (o[k] as Inputs) : undefined;

export const objs = (o: Inputs, k: string): Inputs[] =>
  Array.isArray(o[k]) ? (o[k] as unknown[]).filter((x): x is Inputs => typeof x === "object" && x !== null) : [];

export const strs = (o: Inputs, k: string): string[] => (Array.isArray(o[k]) ? (o[k] as unknown[]).filter((x): x is string => typeof x === "string") : []);

export const tagMap = (o: Inputs, k = "tags"): Record<string, string> =>
  Object.fromEntries(Object.entries(obj(o, k) ?? {}).filter((e): e is [string, string] => typeof e[1] === "string"));

/** The `tags` map as the `{ Key, Value }` list that DynamoDB and SSM take (empty when none). */
export const keyValueTags = (o: Inputs): Array<{ Key: string; Value: string }> => Object.entries(tagMap(o)).map(([Key, Value]) => ({ Key, Value }));

/** A policy document input may be a JSON string or an object (pulumi-aws's PolicyDocument). */
export const policyText = (o: Inputs, k: string): string | undefined => (typeof o[k] === "string" ? (o[k] as string) : o[k] ? JSON.stringify(o[k]) : undefined);

export const definedOnly = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
