/**
 * docs/architecture.md's import rules are a lint (`encache/import-boundaries` in
 * eslint.config.mjs). The rule is shown to fail on a wrong-way import of each kind and to pass the
 * imports the architecture allows; `npm run lint` runs it over the repository.
 *
 * The doc's import diagram ("The code, and who imports whom") is held to the code and to the lint:
 * each node's label names repository paths (joined to its subgraph's folder) that exist; each
 * arrow is one the lint allows (IMPORT_BOUNDARIES, read from eslint.config.mjs) and one the code
 * makes; and every import from one top-level folder into another, read from the source with
 * TypeScript's import scanner, lies in nodes and is drawn (an arrow from or to a subgraph covers
 * its nodes). Imports inside a top-level folder are the lint's business, not the diagram's, and
 * OUTSIDE_THE_DIAGRAM lists the folders left out, with the reason.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { ESLint } from "eslint";
import ts from "typescript";
import { REPO_ROOT } from "../../scripts/docs-generate";

const eslint = new ESLint({ cwd: REPO_ROOT });
const problems = async (file: string, code: string) => {
  const [result] = await eslint.lintText(code, { filePath: path.join(REPO_ROOT, file) });
  return result!.messages.filter((m) => m.ruleId === "encache/import-boundaries" || m.ruleId === "no-restricted-imports").map((m) => m.message);
};

describe("the import rules of docs/architecture.md, as a lint", function () {
  this.timeout(120_000);

  const wrong: Array<[string, string, string]> = [
    ["functions/ingest/planted.ts", 'import { PRODUCT } from "../../policy/contract";\nexport const p = PRODUCT;\n', "policy/contract"],
    ["functions/worker/sub/planted.ts", 'export { x } from "../../../infra/config";\n', "infra/config"],
    ["functions/pool/planted.ts", 'import * as pulumi from "@pulumi/pulumi";\nexport const p = pulumi;\n', "never see Pulumi"],
    ["policy/rules/planted.ts", 'export const load = () => import("../../infra/bundle");\n', "infra/bundle"],
    ["infra/iam/planted.ts", 'export { declare } from "../components/declared-document";\n', "infra/components/declared-document"],
    ["infra/parts/planted.ts", 'export type { StackConfig } from "../config";\n', "infra/config"],
    ["infra/components/planted.ts", 'export { x } from "../../local/platform";\n', "local/platform"],
    ["plan/planted.ts", 'export { x } from "../local/platform";\n', "local/platform"],
  ];
  for (const [file, code, target] of wrong) {
    it(`refuses ${file} importing ${target}`, async () => {
      const found = await problems(file, code);
      expect(found.join("\n")).to.contain(target);
    });
  }

  const right: Array<[string, string]> = [
    ["functions/ingest/planted.ts", 'import { x } from "../shared/env";\nimport { y } from "./gpu";\nexport const z = [x, y];\n'],
    [
      "infra/parts/planted.ts",
      'export { grants } from "../../functions/ingest/iam";\nexport { PRODUCT } from "../../policy/contract";\nexport { ManagedQueue } from "../components/managed-queue";\n',
    ],
    ["policy/rules/planted.ts", 'export { PRODUCT } from "../contract";\n'],
    ["local/planted.ts", 'export { x } from "../plan/mocks";\nexport { y } from "../infra/config";\n'],
  ];
  for (const [file, code] of right) {
    it(`allows what ${file} may import`, async () => {
      expect(await problems(file, code)).to.deep.equal([]);
    });
  }
});

/** One rule of IMPORT_BOUNDARIES (eslint.config.mjs): a repo path prefix and what it may not import. */
export interface Boundary {
  from: string;
  forbid?: string[];
  only?: string[];
  why: string;
}

/** A mermaid flowchart as the import diagram uses it: nodes and subgraphs with the repo paths their labels name, and arrows. */
export interface Flowchart {
  /** Node or subgraph id → the repo paths (patterns) its label names, and the subgraph it sits in. */
  nodes: Map<string, { paths: string[]; parent?: string; subgraph: boolean }>;
  arrows: Array<{ from: string; to: string }>;
}

/**
 * The repo paths a label names: its words with a `/` or a file extension, joined to the enclosing
 * subgraph's folder unless they start at a top-level folder. Pure.
 */
export function labelPaths(label: string, base: string | undefined, topLevel: ReadonlySet<string>): string[] {
  const text = label
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/<br\s*\/?>/g, " ");
  return text
    .split(/[\s,+()]+/)
    .map((w) => w.replace(/:$/, ""))
    .filter((w) => !w.startsWith(".") && (w.includes("/") || /^[\w<>-]+\.(ts|mjs|json)$/.test(w)))
    .map((w) => (topLevel.has(w.split("/")[0]!) || base === undefined ? w : `${base}${w}`));
}

/** `text` split at each `separator` outside a `[label]` (a label may hold `&lt;` or `-->`). Pure. */
function splitOutsideLabels(text: string, separator: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "[") depth++;
    else if (text[i] === "]") depth--;
    else if (depth === 0 && text.startsWith(separator, i)) {
      out.push(text.slice(start, i));
      start = i + separator.length;
      i += separator.length - 1;
    }
  }
  return [...out, text.slice(start)];
}

/** The nodes, subgraphs and arrows of a flowchart (`A --> B & C`, `-->|label|`, `X[label]`, `subgraph S["label"]`). Pure. */
export function parseFlowchart(mermaid: string, topLevel: ReadonlySet<string>): Flowchart {
  const nodes: Flowchart["nodes"] = new Map();
  const arrows: Flowchart["arrows"] = [];
  const stack: string[] = [];
  const base = () => {
    const parent = stack.at(-1);
    return parent === undefined ? undefined : nodes.get(parent)?.paths[0];
  };
  const node = (item: string): string => {
    const m = /^([A-Za-z_]\w*)\s*(?:\["?(.*?)"?\])?$/.exec(item.trim());
    if (!m) throw new Error(`not a node: ${item}`);
    const id = m[1]!;
    const label = m[2];
    if (label !== undefined && !nodes.has(id)) nodes.set(id, { paths: labelPaths(label, base(), topLevel), parent: stack.at(-1), subgraph: false });
    return id;
  };
  for (const raw of mermaid.split("\n")) {
    const line = raw.trim();
    if (line === "" || /^(flowchart|graph|direction|%%)/.test(line)) continue;
    const sub = /^subgraph\s+(\w+)\s*\["?(.*?)"?\]$/.exec(line);
    if (sub) {
      const paths = labelPaths(sub[2]!, base(), topLevel);
      nodes.set(sub[1]!, { paths, parent: stack.at(-1), subgraph: true });
      stack.push(sub[1]!);
      continue;
    }
    if (line === "end") {
      stack.pop();
      continue;
    }
    const segments = splitOutsideLabels(line.replace(/-->\|[^|]*\|/g, "-->"), "-->");
    const ids = segments.map((s) => splitOutsideLabels(s, "&").map(node));
    for (let i = 0; i + 1 < ids.length; i++) for (const from of ids[i]!) for (const to of ids[i + 1]!) arrows.push({ from, to });
  }
  return { nodes, arrows };
}

/** Whether a repo file lies in a path pattern (a folder when it ends in `/`; `<x>` is any one segment). Pure. */
const inPath = (file: string, pattern: string) => {
  const re = pattern
    .split(/(<[^<>]*>)/)
    .map((p) => (/^<.*>$/.test(p) ? "[^/]+" : p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(pattern.endsWith("/") ? `^${re}` : `^${re}$`).test(file);
};
/** How much of a pattern is literal, to pick the narrowest node a file lies in; a file beats the folder around it at equal length. */
const literal = (pattern: string) => pattern.replace(/<[^<>]*>/g, "").length + (pattern.endsWith("/") ? 0 : 0.5);

/** The node a repo file belongs to: the narrowest node naming it, else the innermost subgraph; undefined when outside the diagram. Pure. */
export function nodeOf(file: string, chart: Flowchart): string | undefined {
  let best: { id: string; score: number } | undefined;
  for (const [id, n] of chart.nodes)
    for (const p of n.paths) {
      // A subgraph takes only the files none of its nodes names.
      const score = literal(p) - (n.subgraph ? 1000 : 0);
      if (inPath(file, p) && (best === undefined || score > best.score)) best = { id, score };
    }
  return best?.id;
}

/** Whether node `inner` is `outer` or sits (at any depth) in subgraph `outer`. Pure. */
function within(inner: string | undefined, outer: string, chart: Flowchart): boolean {
  for (let n = inner; n !== undefined; n = chart.nodes.get(n)?.parent) if (n === outer) return true;
  return false;
}

/** The boundaries an arrow from `from` to `to` breaks, by their `why`: a path covering either side counts. Pure. */
export function brokenBoundaries(from: readonly string[], to: readonly string[], boundaries: readonly Boundary[]): string[] {
  const stem = (p: string) => p.replace(/\.(ts|mts|js|mjs|cjs)$/, "");
  const overlaps = (a: string, b: string) => stem(a).startsWith(stem(b)) || stem(b).startsWith(stem(a));
  return boundaries
    .filter((b) => from.some((f) => overlaps(f, b.from)))
    .filter((b) => to.some((t) => (b.only ? !b.only.some((e) => stem(t).startsWith(e)) : (b.forbid ?? []).some((e) => overlaps(t, e)))))
    .map((b) => b.why);
}

/** Every relative import of the repository's TypeScript: importing file → imported file, repo-relative. */
function importEdges(files: readonly string[]): Array<{ from: string; to: string }> {
  const known = new Set(files);
  const resolve = (from: string, specifier: string) => {
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
    return [target, target.replace(/\.js$/, ".ts"), `${target}.ts`, `${target}/index.ts`].find((t) => known.has(t));
  };
  return files
    .filter((f) => /\.(ts|mts)$/.test(f))
    .flatMap((from) =>
      ts
        .preProcessFile(fs.readFileSync(path.join(REPO_ROOT, from), "utf8"), true, true)
        .importedFiles.map((i) => i.fileName)
        .filter((s) => s.startsWith("."))
        .map((s) => resolve(from, s))
        .filter((to): to is string => to !== undefined)
        .map((to) => ({ from, to })),
    );
}

/**
 * Pure: the import cycles of a graph, each a strongly connected set of two or more files (or one
 * that imports itself), sorted (Tarjan's algorithm). Type-only imports count, as madge counts them:
 * a cycle of types still ties two files' edits together.
 */
export function importCycles(edges: ReadonlyArray<{ from: string; to: string }>): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (next.get(v) ?? []).includes(v)) cycles.push(component.sort());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return cycles.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** The mermaid block under a heading of a markdown text. Pure. */
function mermaidUnder(markdown: string, heading: string): string {
  const m = new RegExp(`^## ${heading}\\n[\\s\\S]*?^\`\`\`mermaid\\n([\\s\\S]*?)^\`\`\``, "m").exec(markdown);
  if (!m) throw new Error(`no mermaid block under "## ${heading}"`);
  return m[1]!;
}

/**
 * Top-level folders the diagram leaves out on purpose, with the reason; every other file that
 * imports across top-level folders, or is imported so, must lie in a node.
 */
export const OUTSIDE_THE_DIAGRAM: ReadonlyArray<{ folder: string; why: string }> = [
  { folder: "test/", why: "tests import whatever they test" },
  { folder: "scripts/", why: "the repository's tools (docs, benchmarks, stack outputs) import whatever they report on" },
  { folder: "stryker/", why: "mutation testing's configuration, which runs the tests" },
];

describe("docs/architecture.md's import diagram, held to the code and the lint", () => {
  const TOP = new Set(["functions", "infra", "policy", "plan", "local", "ops", "test"]);

  describe("the reader", () => {
    const chart = parseFlowchart(
      [
        "flowchart LR",
        '  subgraph infra["infra/ (the program)"]',
        "    IDX[index.ts] --> P[parts/&lt;part&gt;.ts<br/>+ .config.ts]",
        "  end",
        '  OPS["ops/ (the command)"]',
        "  P -->|grants| OPS & X[functions/]",
        "  infra --> OPS",
      ].join("\n"),
      TOP,
    );

    it("reads each node's paths against its subgraph's folder, and every arrow of a chain and a list", () => {
      expect([...chart.nodes].map(([id, n]) => [id, n.paths, n.parent])).to.deep.equal([
        ["infra", ["infra/"], undefined],
        ["IDX", ["infra/index.ts"], "infra"],
        ["P", ["infra/parts/<part>.ts"], "infra"],
        ["OPS", ["ops/"], undefined],
        ["X", ["functions/"], undefined],
      ]);
      expect(chart.arrows).to.deep.equal([
        { from: "IDX", to: "P" },
        { from: "P", to: "OPS" },
        { from: "P", to: "X" },
        { from: "infra", to: "OPS" },
      ]);
    });

    it("puts a file in the narrowest node naming it, else in its subgraph, else nowhere", () => {
      expect(nodeOf("infra/parts/worker.config.ts", chart)).to.equal("P");
      expect(nodeOf("infra/index.ts", chart)).to.equal("IDX");
      expect(nodeOf("infra/lib/runbook.ts", chart)).to.equal("infra");
      expect(nodeOf("scripts/docs.ts", chart)).to.equal(undefined);
    });

    const boundaries: Boundary[] = [
      { from: "ops/", forbid: ["infra/"], why: "ops reads outputs" },
      { from: "policy/", only: ["policy/"], why: "the pack is alone" },
    ];
    const cases: Array<[string, string[], string[], string[]]> = [
      ["a wrong-way arrow", ["ops/"], ["infra/parts/<part>.ts"], ["ops reads outputs"]],
      ["an arrow into a folder holding a forbidden one", ["ops/"], ["infra/"], ["ops reads outputs"]],
      ["an arrow outside an only-list", ["policy/rules/"], ["functions/"], ["the pack is alone"]],
      ["an allowed arrow", ["infra/"], ["ops/"], []],
    ];
    for (const [title, from, to, broken] of cases) {
      it(`${title}: ${from} → ${to} ${broken.length ? "breaks a boundary" : "breaks none"}`, () => {
        expect(brokenBoundaries(from, to, boundaries)).to.deep.equal(broken);
      });
    }
  });

  describe("the diagram", () => {
    const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], { cwd: REPO_ROOT, encoding: "utf8" })
      .split("\n")
      .filter((f) => f !== "" && fs.existsSync(path.join(REPO_ROOT, f)));
    const topLevel = new Set(files.filter((f) => f.includes("/")).map((f) => f.split("/")[0]!));
    const chart = parseFlowchart(
      mermaidUnder(fs.readFileSync(path.join(REPO_ROOT, "docs", "architecture.md"), "utf8"), "The code, and who imports whom"),
      topLevel,
    );
    const edges = importEdges(files);
    const area = (file: string) => file.split("/")[0]!;
    let boundaries: Boundary[] = [];
    before(async () => {
      // eslint.config.mjs is the lint's own module: its rules are read, not copied.
      ({ IMPORT_BOUNDARIES: boundaries } = (await import(path.join(REPO_ROOT, "eslint.config.mjs"))) as { IMPORT_BOUNDARIES: Boundary[] });
    });

    it("names, in every node, paths that exist", () => {
      const missing = [...chart.nodes].flatMap(([id, n]) =>
        n.paths.length === 0 ? [`${id}: names no path`] : n.paths.filter((p) => !files.some((f) => inPath(f, p))).map((p) => `${id}: ${p}`),
      );
      expect(missing).to.deep.equal([]);
    });

    it("draws only arrows the lint allows", () => {
      const paths = (id: string) => chart.nodes.get(id)?.paths ?? [];
      const wrong = chart.arrows.flatMap((a) => brokenBoundaries(paths(a.from), paths(a.to), boundaries).map((why) => `${a.from} --> ${a.to}: ${why}`));
      expect(wrong).to.deep.equal([]);
    });

    it("draws only imports the code makes", () => {
      const unmade = chart.arrows.filter((a) => !edges.some((e) => within(nodeOf(e.from, chart), a.from, chart) && within(nodeOf(e.to, chart), a.to, chart)));
      expect(unmade.map((a) => `${a.from} --> ${a.to}`)).to.deep.equal([]);
    });

    const outside = (file: string) => OUTSIDE_THE_DIAGRAM.some((o) => file.startsWith(o.folder));
    const across = edges.filter((e) => area(e.from) !== area(e.to) && !outside(e.from) && !outside(e.to));

    it("has a node for every file that imports across top-level folders or is imported so", () => {
      const homeless = [...new Set(across.flatMap((e) => [e.from, e.to]).filter((f) => nodeOf(f, chart) === undefined))];
      expect(homeless, "files in no node (draw their folder, or add it to OUTSIDE_THE_DIAGRAM with the reason)").to.deep.equal([]);
    });

    it("draws every import from one top-level folder into another", () => {
      const undrawn = across
        .map((e) => ({ ...e, fromNode: nodeOf(e.from, chart), toNode: nodeOf(e.to, chart) }))
        .filter((e) => !chart.arrows.some((a) => within(e.fromNode, a.from, chart) && within(e.toNode, a.to, chart)))
        .map((e) => `${e.from} → ${e.to} (${e.fromNode} --> ${e.toNode})`);
      expect(undrawn, "imports the diagram does not draw").to.deep.equal([]);
    });
  });

  describe("no import cycles (what madge --circular reports)", () => {
    it("finds a two-file cycle and a self-import, and no cycle in a chain", () => {
      const cycles = importCycles([
        { from: "a.ts", to: "b.ts" },
        { from: "b.ts", to: "a.ts" },
        { from: "c.ts", to: "c.ts" },
        { from: "d.ts", to: "e.ts" },
        { from: "e.ts", to: "f.ts" },
      ]);
      expect(cycles).to.deep.equal([["a.ts", "b.ts"], ["c.ts"]]);
    });

    it("has none in the repository", () => {
      const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], { cwd: REPO_ROOT, encoding: "utf8" })
        .split("\n")
        .filter((f) => f !== "" && fs.existsSync(path.join(REPO_ROOT, f)));
      expect(importCycles(importEdges(files))).to.deep.equal([]);
    });
  });
});
