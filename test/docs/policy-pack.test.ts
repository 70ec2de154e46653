/**
 * docs/policy-pack.md's two rules tables are held to policy/policies.ts and the stacks' pack
 * configs: every rule the pack serves has one row in each, no row names a rule the pack lacks, and
 * the kind, default level, each stack's level and the config keys a row gives are the pack's own.
 * The "checks" column is prose and is not compared.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import type { Policy, PolicyConfigSchema } from "@pulumi/policy";
import { REPO_ROOT } from "../../infra/bundle";
import { policies } from "../../policy/policies";
import type { PolicyPackConfig } from "../../policy/testing/types";

const DOC = fs.readFileSync(path.join(REPO_ROOT, "docs", "policy-pack.md"), "utf8");

/** The rows of the markdown table whose header row is `header`, as cells; [] when there is no such table. Pure. */
export function tableRows(markdown: string, header: string): string[][] {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => l.trim() === header);
  if (start < 0) return [];
  const rows: string[][] = [];
  // Skip the header and its |---| line; the table ends at the first line that is not a row.
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(
      line
        .replace(/^\|\s*/, "")
        .replace(/\s*\|\s*$/, "")
        .split(/\s+\|\s+/),
    );
  }
  return rows;
}

const ruleName = (cell: string | undefined) => /^`([a-z0-9-]+)`$/.exec(cell ?? "")?.[1] ?? `(not a rule: ${cell})`;
const packConfig = (stack: string) => JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "policy", `config.${stack}.json`), "utf8")) as PolicyPackConfig;
const levelIn = (config: PolicyPackConfig, rule: string) => {
  const entry = config[rule];
  return typeof entry === "string" ? entry : (entry?.enforcementLevel ?? "(unset)");
};
const kindOf = (p: Policy) => ("validateResource" in p ? "resource" : "validateStack" in p ? "stack" : "(neither)");
const configKeys = (p: Policy) => Object.keys((p as { configSchema?: PolicyConfigSchema }).configSchema?.properties ?? {});

const TABLES = [
  { title: "the rules table", header: "| rule | kind | default | dev / prod | config | checks |" },
  { title: "the table of when each rule decides", header: "| rule | first preview | later preview | `up` |" },
];

describe("docs/policy-pack.md names every rule of the pack, as the pack has it", () => {
  describe("tableRows", () => {
    it("reads the rows under a header up to the first line that is not a row, and nothing when the header is absent", () => {
      // Prepare
      const md = ["text", "| a | b |", "|---|---|", "| `x` | 1 |", "| `y` | 2 |", "", "| `z` | 3 |"].join("\n");
      // Act / Assess
      expect(tableRows(md, "| a | b |")).to.deep.equal([
        ["`x`", "1"],
        ["`y`", "2"],
      ]);
      expect(tableRows(md, "| c |")).to.deep.equal([]);
    });
  });

  const served = policies.map((p) => p.name).sort();
  for (const t of TABLES) {
    it(`${t.title} has one row per rule of policy/policies.ts, and no other`, () => {
      // Prepare / Act
      const named = tableRows(DOC, t.header).map((r) => ruleName(r[0]));
      // Assess
      expect(named.length, "the table is missing or empty").to.be.greaterThan(0);
      expect([...named].sort(), "rows not in the pack, or rules without a row").to.deep.equal(served);
      expect(new Set(named).size, "a rule has two rows").to.equal(named.length);
    });
  }

  const dev = packConfig("dev");
  const prod = packConfig("prod");
  const rows = new Map(tableRows(DOC, TABLES[0]!.header).map((r) => [ruleName(r[0]), r]));
  for (const p of policies) {
    it(`${p.name}: the rules table gives its kind, default level, dev / prod levels and config keys`, () => {
      // Prepare
      const row = rows.get(p.name);
      expect(row, `no row for ${p.name}`).to.not.equal(undefined);
      const [, kind, level, levels, config] = row!;
      // Assess
      expect(kind).to.equal(kindOf(p));
      expect(level).to.equal(p.enforcementLevel);
      expect(levels).to.equal(`${levelIn(dev, p.name)} / ${levelIn(prod, p.name)}`);
      expect(config === "–" ? [] : config!.split(/,\s*/)).to.deep.equal(configKeys(p));
    });
  }
});
