import { z } from "zod";

export class EnvConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid Lambda environment: ${problems.join("; ")}`);
    this.name = "EnvConfigError";
  }
}

/**
 * One variable of a function's environment: the env var's name, how its text parses into the
 * field's value, and how the program writes that value as text. There are no defaults and no
 * bounds here: the program sets every variable from the stack config, whose schema holds them
 * (`infra/parts/<part>.config.ts`), so a function only checks that a value is there and well-typed.
 */
export interface EnvField<T> {
  readonly name: string;
  readonly parse: z.ZodType<T, string>;
  readonly format: (value: T) => string;
  /** Set only for a variable the program may leave unset (the field is then `undefined`). */
  readonly optional?: true;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a table of fields of any value type
export type EnvFields = Record<string, EnvField<any>>;

/** The typed values of a table of fields, as one object type (an optional field's key is optional). */
export type EnvValues<F extends EnvFields> = Flat<
  {
    [K in keyof F as F[K]["optional"] extends true ? never : K]: F[K] extends EnvField<infer T> ? T : never;
  } & {
    [K in keyof F as F[K]["optional"] extends true ? K : never]?: F[K] extends EnvField<infer T> ? T : never;
  }
>;

/**
 * The typed values a codec parses. A function's config type is this (or built on it), so a field
 * added to the codec is a field of the config, and the config cannot restate the codec differently.
 */
export type EnvValuesOf<C extends { readonly fields: EnvFields }> = EnvValues<C["fields"]>;

/** An intersection of object types as one object type: what editors show, and what type-level equality compares. */
type Flat<T> = { [K in keyof T]: T[K] };

/** A function's env codec: its one table of field, env var name and parser. */
export interface EnvCodec<F extends EnvFields> {
  readonly fields: F;
  /** The fields' keys in byte order of their env var names: the order every environment is emitted in. */
  readonly order: readonly (keyof F & string)[];
  /** Reads exactly these variables; throws EnvConfigError naming every missing or bad variable. */
  parse(env: NodeJS.ProcessEnv): EnvValues<F>;
  /** The environment that carries `values`, in byte order of the variable names. */
  encode(values: EnvValues<F>): Record<string, string>;
}

/** Byte order of two ASCII names (what the AWS provider sorts container environments by). */
export function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A codec over `fields`; two fields may not share an env var name. */
export function envCodec<F extends EnvFields>(fields: F): EnvCodec<F> {
  const names = Object.values(fields).map((f) => f.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new Error(`env codec: ${dup} is named by two fields`);
  const order = (Object.keys(fields) as (keyof F & string)[]).sort((a, b) => byteOrder(fields[a]!.name, fields[b]!.name));
  return {
    fields,
    order,
    parse: (env) => parseFields(fields, order, env) as EnvValues<F>,
    encode: (values) => {
      const out: Record<string, string> = {};
      for (const key of order) {
        const value = (values as Record<string, unknown>)[key];
        if (value !== undefined) out[fields[key]!.name] = fields[key]!.format(value);
      }
      return out;
    },
  };
}

/** Empty text counts as unset: infra tooling often renders "no value" as "". */
function parseFields(fields: EnvFields, order: readonly string[], env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const key of order) {
    const field = fields[key]!;
    const raw = env[field.name];
    if (raw === undefined || raw === "") {
      if (!field.optional) problems.push(`${field.name} is required but not set`);
      continue;
    }
    const result = field.parse.safeParse(raw);
    if (result.success) out[key] = result.data;
    else problems.push(`${field.name} is invalid (${result.error.issues.map((i) => i.message).join(", ")}; got ${JSON.stringify(raw)})`);
  }
  if (problems.length > 0) throw new EnvConfigError(problems);
  return out;
}

/** The same field, which the program may leave unset. */
export function optional<T>(field: EnvField<T>): EnvField<T> & { readonly optional: true } {
  return { ...field, optional: true };
}

/** Any non-empty text. */
export function envText(name: string): EnvField<string> {
  return { name, parse: z.string(), format: (v) => v };
}

/** A whole number, digits only ("8080abc" and "1e3" are not). */
export function envInt(name: string): EnvField<number> {
  return { name, parse: z.string().regex(/^\d+$/, "must be a whole number").transform(Number), format: String };
}

/** An http(s) URL. */
export function envUrl(name: string): EnvField<string> {
  return { name, parse: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }), format: (v) => v };
}

/** `true` or `false` (also 1/0, yes/no, as the original systems wrote them). */
export function envFlag(name: string): EnvField<boolean> {
  return {
    name,
    parse: z
      .string()
      .regex(/^(true|false|1|0|yes|no)$/i, "must be true or false")
      .transform((s) => /^(true|1|yes)$/i.test(s)),
    format: String,
  };
}

/** One of a fixed set of words. */
export function envChoice<const T extends readonly [string, ...string[]]>(name: string, choices: T): EnvField<T[number]> {
  return { name, parse: z.enum(choices, { error: `must be one of ${choices.join(", ")}` }), format: (v) => v };
}

/** A comma-separated list; blanks are dropped. */
export function envList(name: string): EnvField<string[]> {
  return {
    name,
    parse: z.string().transform((s) =>
      s
        .split(",")
        .map((x) => x.trim())
        .filter((x) => x.length > 0),
    ),
    format: (v) => v.join(","),
  };
}

/** JSON, whose parsed value `schema` types. */
export function envJson<T>(name: string, schema: z.ZodType<T, unknown>): EnvField<T> {
  return {
    name,
    parse: z
      .string()
      .transform((raw, ctx) => {
        try {
          return JSON.parse(raw) as unknown;
        } catch {
          ctx.addIssue({ code: "custom", message: "must be JSON" });
          return z.NEVER;
        }
      })
      .pipe(schema),
    format: (v) => JSON.stringify(v),
  };
}
