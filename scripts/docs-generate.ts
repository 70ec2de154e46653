/**
 * The lists the docs hold, generated from the code. A doc marks each list as a region,
 *
 *   <!-- generated:<name> -->
 *   …
 *   <!-- /generated -->
 *
 * and `npm run docs` rewrites every region from its source: the stack outputs from the program
 * itself (run under the plan's mocks), the test tiers from package.json, the workflows from
 * .github/workflows, the stack config from the zod schemas, their JSDoc and the stack files.
 * test/docs/generated.test.ts regenerates in memory and fails on any difference.
 */
import { spawnSync } from "node:child_process";
import { OPERATOR_FLEET_GRANTS, OPERATOR_GRANTS, OPERATOR_INSTANCE_GRANTS } from "../ops/iam";
import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";
import { parse } from "yaml";
import { z } from "zod";

export const REPO_ROOT = path.resolve(__dirname, "..");

/** The markdown files a generated region may sit in: the README and everything under docs/. */
export function markdownFiles(root = REPO_ROOT): string[] {
  const walk = (dir: string): string[] =>
    fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.posix.join(dir, e.name);
      return e.isDirectory() ? walk(rel) : e.name.endsWith(".md") ? [rel] : [];
    });
  return ["README.md", ...walk("docs")].filter((f) => fs.existsSync(path.join(root, f)));
}

const REGION = /<!-- generated:([a-z-]+) -->\n([\s\S]*?)<!-- \/generated -->/g;

/** The names of the regions a markdown text holds, in order. Pure. */
export function regionNames(markdown: string): string[] {
  return [...markdown.matchAll(REGION)].map((m) => m[1]!);
}

/** The text with every region's body replaced by what `render` gives for its name (the old body is passed in). Pure. */
export function fillRegions(markdown: string, render: (name: string, body: string) => string): string {
  return markdown.replace(REGION, (_all, name: string, body: string) => `<!-- generated:${name} -->\n${render(name, body).trimEnd()}\n<!-- /generated -->`);
}

const mdCell = (s: string) =>
  s
    .replace(/\|/g, "\\|")
    .replace(/\s*\n\s*/g, " ")
    .trim();
const code = (s: string) => (s.includes("`") ? `\`\` ${s} \`\`` : `\`${s}\``);

// ---------------------------------------------------------------------------------------------
// Stack outputs: the keys of the object the program returns, per stack.

export const STACKS = ["dev", "prod"] as const;

/** The program's outputs for one stack, in the program's order (scripts/stack-outputs.ts, in a child process). */
export function stackOutputs(stack: string): string[] {
  const run = spawnSync(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "scripts", "stack-outputs.ts"), stack], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: 180_000,
  });
  if (run.status !== 0) throw new Error(`stack outputs of ${stack}: exit ${run.status}\n${run.stderr}`);
  return JSON.parse(run.stdout.trim().split("\n").at(-1)!) as string[];
}

/** The outputs table: every output of any stack, in program order, and which stacks export it. Pure. */
export function renderOutputs(byStack: Record<string, string[]>): string {
  const names = [...new Set(Object.values(byStack).flat())];
  const stacks = Object.keys(byStack);
  const rows = names.map((n) => `| ${code(n)} | ${stacks.map((s) => (byStack[s]!.includes(n) ? "yes" : "–")).join(" | ")} |`);
  return [
    `${names.length} outputs, as the program returns them:`,
    "",
    `| output | ${stacks.join(" | ")} |`,
    `|---|${stacks.map(() => "---|").join("")}`,
    ...rows,
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Test tiers: `test:tiers` in package.json, in its order, each with the paths its script runs.

interface PackageJson {
  scripts: Record<string, string>;
}

/** The scripts `test:tiers` runs, in order. Pure. */
export function tierScripts(pkg: PackageJson): string[] {
  const chain = pkg.scripts["test:tiers"];
  if (!chain) throw new Error("package.json has no test:tiers script");
  return chain.split("&&").map((step) => {
    const m = /^\s*npm run (\S+)\s*$/.exec(step);
    if (!m) throw new Error(`test:tiers step is not \`npm run <script>\`: ${step.trim()}`);
    if (!pkg.scripts[m[1]!]) throw new Error(`test:tiers runs ${m[1]}, which package.json does not define`);
    return m[1]!;
  });
}

/** What a script runs, in short: its test paths (mocha's globs and files, less ignores), else its command. Pure. */
export function tierRuns(script: string): string {
  const words = script.match(/"[^"]*"|\S+/g) ?? [];
  const paths: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!.replace(/^"|"$/g, "");
    if (w === "--ignore" || w === "--require" || w === "--import") {
      i++;
      continue;
    }
    if (/^test\//.test(w)) paths.push(w);
  }
  if (paths.length > 0) return paths.map(code).join(" ");
  return code(script);
}

/** The cells of a markdown table row (an escaped `\\|` stays inside its cell). Pure. */
export function tableCells(line: string): string[] {
  if (!line.trim().startsWith("|")) return [];
  return line
    .trim()
    .replace(/^\|/, "")
    .replace(/(?<!\\)\|$/, "")
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

export const TIER_PLACEHOLDER = "(describe this tier)";

/**
 * The tiers table. Its commands and what each runs come from package.json; the prose of each row
 * is kept from the table it replaces (matched by command), so a new tier gets a placeholder that
 * test/docs fails on until someone describes it. Pure.
 */
export function renderTiers(pkg: PackageJson, previous: string): string {
  const notes = new Map<string, string>();
  for (const line of previous.split("\n")) {
    const cells = tableCells(line);
    const script = /^`npm run (\S+)`$/.exec(cells[0] ?? "")?.[1];
    if (script && cells.length >= 3) notes.set(script, cells[2]!);
  }
  const rows = tierScripts(pkg).map((s) => `| ${code(`npm run ${s}`)} | ${mdCell(tierRuns(pkg.scripts[s]!))} | ${notes.get(s) ?? TIER_PLACEHOLDER} |`);
  return ["| command | runs | what it checks |", "|---|---|---|", ...rows].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Workflows: every file in .github/workflows, its triggers and its jobs, and the first sentence of
// the comment it opens with.

interface WorkflowFile {
  file: string;
  name: string;
  triggers: string[];
  jobs: string[];
  summary: string;
}

export function readWorkflows(root = REPO_ROOT): WorkflowFile[] {
  const dir = path.join(root, ".github", "workflows");
  return fs
    .readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((file) => {
      const text = fs.readFileSync(path.join(dir, file), "utf8");
      const doc = parse(text) as { name?: string; on?: unknown; jobs?: Record<string, unknown> };
      const on = doc.on;
      const triggers = typeof on === "string" ? [on] : Array.isArray(on) ? on.map(String) : Object.keys((on ?? {}) as object);
      const comment = text
        .split("\n")
        .filter((_line, i, all) => all.slice(0, i + 1).every((x) => x.startsWith("#")))
        .map((l) => l.replace(/^#\s?/, ""))
        .join(" ");
      return { file, name: doc.name ?? file, triggers, jobs: Object.keys(doc.jobs ?? {}), summary: firstSentence(comment) };
    });
}

/** Up to the first full stop that ends a sentence (not one inside a name such as `ci.yml`). Pure. */
export function firstSentence(text: string): string {
  const m = /^(.*?\.)(\s|$)/s.exec(text.trim());
  return (m ? m[1]! : text).trim();
}

export function renderWorkflows(workflows: WorkflowFile[]): string {
  const rows = workflows.map((w) => `| ${code(w.file)} | ${w.triggers.map(code).join(", ")} | ${w.jobs.map(code).join(", ")} | ${mdCell(w.summary)} |`);
  return [`${workflows.length} workflows in \`.github/workflows/\`:`, "", "| workflow | on | jobs | what it does |", "|---|---|---|---|", ...rows].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Stack config: every key of the stack schema, with its type, default, each stack's value and the
// JSDoc written on it in the schema's source.

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  pattern?: string;
}

export interface ConfigKey {
  /** The key's path under `encache:`; a record's key is `<name>`. */
  path: string[];
  type: string;
  default?: unknown;
}

/** Every key of a JSON schema: the leaves, and the arrays and records that hold objects (their fields as children). Pure. */
export function configKeys(schema: JsonSchema, prefix: string[] = []): ConfigKey[] {
  const keys: ConfigKey[] = [];
  for (const [name, s] of Object.entries(schema.properties ?? {})) {
    const p = [...prefix, name];
    const obj = objectOf(s);
    if (obj?.properties && Object.keys(obj.properties).length > 0) {
      if (s.default !== undefined && !isEmptyObject(s.default)) keys.push({ path: p, type: "object", default: s.default });
      keys.push(...configKeys(obj, p));
    } else if (obj && typeof obj.additionalProperties === "object") {
      keys.push({ path: p, type: "map", ...(s.default !== undefined ? { default: s.default } : {}) });
      keys.push(...configKeys({ properties: { "<name>": obj.additionalProperties } }, p));
    } else {
      keys.push({ path: p, type: typeOf(s), ...(s.default !== undefined ? { default: s.default } : {}) });
    }
  }
  return keys;
}

const isEmptyObject = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
/**
 * The object a key holds; for a union of objects (a discriminated union such as `gpu.model`), one
 * object with every variant's fields, a field that differs between variants as their union. Pure.
 */
const objectOf = (s: JsonSchema): JsonSchema | undefined => {
  if (s.type === "object") return s;
  const variants = [...(s.anyOf ?? []), ...(s.oneOf ?? [])].filter((x) => x.type === "object");
  if (variants.length <= 1) return variants[0];
  const properties: Record<string, JsonSchema> = {};
  for (const v of variants) {
    for (const [name, field] of Object.entries(v.properties ?? {})) {
      const seen = properties[name];
      properties[name] = !seen || JSON.stringify(seen) === JSON.stringify(field) ? field : { anyOf: [...(seen.anyOf ?? [seen]), field] };
    }
  }
  return { type: "object", properties };
};

/** A short type: `integer 2–1000`, `"Single" \| "OnePerAz"`, `string[]`, `{protocol, endpoint}[]`. Pure. */
export function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (s.const !== undefined) return JSON.stringify(s.const);
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return [...new Set(alts.map(typeOf))].join(" | ");
  if (s.type === "array") {
    const item = s.items ? (s.items.type === "object" && s.items.properties ? `{${Object.keys(s.items.properties).join(", ")}}` : typeOf(s.items)) : "unknown";
    const count = s.minItems !== undefined || s.maxItems !== undefined ? ` (${s.minItems ?? 0}–${s.maxItems ?? "…"} items)` : "";
    return `${item}[]${count}`;
  }
  const t = Array.isArray(s.type) ? s.type.join(" | ") : (s.type ?? "any");
  const SAFE = Number.MAX_SAFE_INTEGER;
  const lo = s.exclusiveMinimum !== undefined ? `>${s.exclusiveMinimum}` : s.minimum !== undefined && s.minimum > -SAFE ? String(s.minimum) : undefined;
  const hi = s.maximum !== undefined && s.maximum < SAFE ? String(s.maximum) : undefined;
  if (lo !== undefined && hi !== undefined) return `${t} ${lo}–${hi}`;
  if (lo !== undefined) return `${t} ≥ ${lo.replace(/^>/, "> ")}`.replace("≥ > ", "> ");
  if (hi !== undefined) return `${t} ≤ ${hi}`;
  return t;
}

export interface SchemaDoc {
  file: string;
  /** The property names from the outermost object literal in the file down to the documented one. */
  chain: string[];
  text: string;
  default?: string;
}

/** The files under infra/ that declare zod schemas. */
export function schemaFiles(root = REPO_ROOT): string[] {
  const walk = (dir: string): string[] =>
    fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.posix.join(dir, e.name);
      if (e.isDirectory()) return walk(rel);
      return e.name.endsWith(".ts") && /from "zod"/.test(fs.readFileSync(path.join(root, rel), "utf8")) ? [rel] : [];
    });
  return walk("infra").sort();
}

/** Every JSDoc on a property of an object literal in a source file, with the chain of property names above it. Pure. */
export function schemaDocs(file: string, source: string): SchemaDoc[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const docs: SchemaDoc[] = [];
  const nameOf = (n: ts.PropertyName) => (ts.isIdentifier(n) || ts.isStringLiteral(n) ? n.text : n.getText(sf));
  const visit = (node: ts.Node) => {
    if (ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) {
      const jsdoc = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc).at(-1);
      if (jsdoc) {
        const chain: string[] = [];
        for (let n: ts.Node | undefined = node; n; n = n.parent)
          if (ts.isPropertyAssignment(n) || ts.isShorthandPropertyAssignment(n)) chain.unshift(nameOf(n.name));
        const text = ts.getTextOfJSDocComment(jsdoc.comment) ?? "";
        const def = jsdoc.tags?.find((t) => t.tagName.text === "default");
        docs.push({ file, chain, text: text.replace(/\s+/g, " ").trim(), ...(def ? { default: (ts.getTextOfJSDocComment(def.comment) ?? "").trim() } : {}) });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return docs;
}

/** The doc of a key: the one whose chain is the longest suffix of the key's path (named records skipped). Pure. */
export function docFor(keyPath: string[], docs: SchemaDoc[]): SchemaDoc | undefined {
  const names = keyPath.filter((p) => p !== "<name>");
  let best: SchemaDoc | undefined;
  for (const d of docs) {
    if (d.chain.length > names.length) continue;
    if (!d.chain.every((c, i) => c === names[names.length - d.chain.length + i])) continue;
    if (!best || d.chain.length > best.chain.length) best = d;
  }
  return best;
}

/** A stack file's value at a key path, or undefined. Pure. */
export function stackValue(config: Record<string, unknown>, keyPath: string[]): unknown {
  let v: unknown = config[`encache:${keyPath[0]}`];
  for (const p of keyPath.slice(1)) {
    if (p === "<name>") {
      if (typeof v !== "object" || v === null) return undefined;
      const named = Object.entries(v as Record<string, unknown>);
      return named.length > 0 ? `(${named.length} named: ${named.map(([k]) => k).join(", ")})` : undefined;
    }
    v = typeof v === "object" && v !== null ? (v as Record<string, unknown>)[p] : undefined;
  }
  return v;
}

const shortValue = (v: unknown): string => {
  if (v === undefined) return "–";
  const s = typeof v === "string" && v.startsWith("(") ? v : JSON.stringify(v);
  return s.length > 48 ? `${code(`${s.slice(0, 45)}…`)}` : code(s);
};

/** The stack schema as JSON schema (input side: what a stack file may say). */
export async function stackJsonSchema(): Promise<JsonSchema> {
  const { stackConfigSchema } = await import("../infra/config.js");
  return z.toJSONSchema(stackConfigSchema, { io: "input", unrepresentable: "any" }) as JsonSchema;
}

export function readStackConfig(stack: string, root = REPO_ROOT): Record<string, unknown> {
  return ((parse(fs.readFileSync(path.join(root, `Pulumi.${stack}.yaml`), "utf8")) as { config?: Record<string, unknown> }).config ?? {}) as Record<
    string,
    unknown
  >;
}

/** The config reference: one table per top-level key, a row per key. Pure. */
export function renderConfig(keys: ConfigKey[], docs: SchemaDoc[], stacks: Record<string, Record<string, unknown>>): string {
  const names = Object.keys(stacks);
  const out: string[] = [];
  let section = "";
  for (const k of keys) {
    const keySection = k.path.length > 1 ? `\`encache:${k.path[0]}\`` : "The platform";
    if (keySection !== section) {
      section = keySection;
      out.push("", `### ${section}`, "", `| key | type | default | ${names.join(" | ")} | meaning |`, `|---|---|---|${names.map(() => "---|").join("")}---|`);
    }
    const doc = docFor(k.path, docs);
    const def = k.default !== undefined ? shortValue(k.default) : doc?.default ? mdCell(doc.default) : "(required)";
    const values = names.map((s) => shortValue(stackValue(stacks[s]!, k.path)));
    out.push(`| ${code(k.path.join("."))} | ${mdCell(k.type)} | ${def} | ${values.join(" | ")} | ${mdCell(doc?.text ?? "")} |`);
  }
  return [`${keys.length} keys under \`encache:\`, from the stack schema (\`stackConfigSchema\`), its JSDoc and the stack files:`, ...out].join("\n");
}

// ---------------------------------------------------------------------------------------------

/** What each region's source says now. The outputs take a run of the program per stack, so they are computed only when a doc asks. */
export async function renderers(root = REPO_ROOT): Promise<(name: string, body: string) => string> {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as PackageJson;
  let outputs: string | undefined;
  let config: string | undefined;
  const schema = await stackJsonSchema();
  return (name, body) => {
    switch (name) {
      case "outputs":
        outputs ??= renderOutputs(Object.fromEntries(STACKS.map((s) => [s, stackOutputs(s)])));
        return outputs;
      case "tiers":
        return renderTiers(pkg, body);
      case "workflows":
        return renderWorkflows(readWorkflows(root));
      case "operator-grants":
        return renderOperatorGrants();
      case "config":
        config ??= renderConfig(
          configKeys(schema),
          schemaFiles(root).flatMap((f) => schemaDocs(f, fs.readFileSync(path.join(root, f), "utf8"))),
          Object.fromEntries(STACKS.map((s) => [s, readStackConfig(s, root)])),
        );
        return config;
      default:
        throw new Error(`no generator for the region "${name}"`);
    }
  };
}

/** ops/iam.ts's grants as a table: each statement of the operator policy, its actions and what they apply to. Pure. */
export function renderOperatorGrants(): string {
  const rows = [
    ...OPERATOR_GRANTS.map((g) => ({ g, mode: "both" })),
    ...OPERATOR_INSTANCE_GRANTS.map((g) => ({ g, mode: "instance" })),
    ...OPERATOR_FLEET_GRANTS.map((g) => ({ g, mode: "fleet" })),
  ];
  const lines = ["| statement (Sid) | GPU mode | actions | on | sent by ops, or checked by AWS for it |", "|---|---|---|---|---|"];
  for (const { g, mode } of rows) {
    const implied = "implied" in g && g.implied === true;
    lines.push(
      `| \`${g.sid}\` | ${mode} | ${g.actions.map((a) => `\`${a}\``).join(", ")} | \`${g.resource}\` | ${implied ? "checked by SQS during a redrive" : "sent"} |`,
    );
  }
  return lines.join("\n");
}

/** Every markdown file with regions, as it is and as it should be. */
export async function regenerate(root = REPO_ROOT): Promise<Array<{ file: string; current: string; wanted: string }>> {
  const render = await renderers(root);
  return markdownFiles(root)
    .map((file) => ({ file, current: fs.readFileSync(path.join(root, file), "utf8") }))
    .filter((f) => regionNames(f.current).length > 0)
    .map((f) => ({ ...f, wanted: fillRegions(f.current, render) }));
}
