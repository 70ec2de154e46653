/**
 * `npm run mutate` (scripts/mutate.ts): which parts it runs, how it scores them, the listing of
 * equivalent mutants it does not count, the shim that lets the mocha runner load Mocha 12, and the
 * weekly workflow. Stryker itself is not run here: a run takes minutes per part.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { REPO_ROOT } from "../../infra/bundle";
import { type MutantStatus, PARTS, scoreOf, scoreTable, selectParts, THRESHOLDS } from "../../stryker/parts";

type Ignorer = typeof import("../../stryker/equivalent-ignorer.mjs");
const loadIgnorer = () => import(path.join(REPO_ROOT, "stryker/equivalent-ignorer.mjs")) as Promise<Ignorer>;

/** A NodePath as the instrumenter hands it to an ignorer: the file's code and the node's span. */
function nodeOf(file: string, code: string, snippet: string) {
  const start = code.indexOf(snippet);
  expect(start, `the fixture holds ${snippet}`).to.be.at.least(0);
  return { node: { start, end: start + snippet.length }, hub: { file: { opts: { filename: path.join(REPO_ROOT, file) }, code } } };
}

describe("mutation testing (npm run mutate)", () => {
  describe("selectParts", () => {
    it("runs every part, in order, when none is named", () => {
      expect(selectParts([])).to.deep.equal(["ingest", "retraining", "fleet", "worker", "pool", "shared"]);
    });

    it("runs the parts named, in the order given, once each", () => {
      expect(selectParts(["pool", "shared", "pool"])).to.deep.equal(["pool", "shared"]);
    });

    it("refuses an unknown part, naming it and the parts there are", () => {
      expect(() => selectParts(["pool", "gpu"])).to.throw(/unknown part "gpu": expected one of ingest, retraining, fleet, worker, pool, shared/);
    });
  });

  describe("scoreOf", () => {
    const table: Array<{ name: string; statuses: MutantStatus[]; score: number; covered: number }> = [
      { name: "a timeout counts as detected", statuses: ["Killed", "Timeout", "Survived", "Survived"], score: 50, covered: 50 },
      {
        name: "a mutant no test reaches counts against the score, not the covered score",
        statuses: ["Killed", "Killed", "Killed", "NoCoverage"],
        score: 75,
        covered: 100,
      },
      {
        name: "ignored (listed equivalent) and erroring mutants count for nothing",
        statuses: ["Killed", "Survived", "Ignored", "CompileError", "RuntimeError"],
        score: 50,
        covered: 50,
      },
      {
        name: "rounds down, so 89.99 is not reported as 90",
        statuses: [...Array<MutantStatus>(8999).fill("Killed"), ...Array<MutantStatus>(1001).fill("Survived")],
        score: 89.9,
        covered: 89.9,
      },
      { name: "nothing valid to kill scores 100", statuses: ["Ignored"], score: 100, covered: 100 },
    ];
    for (const { name, statuses, score, covered } of table) {
      it(name, () => {
        const result = scoreOf(statuses);
        expect(result.score).to.equal(score);
        expect(result.coveredScore).to.equal(covered);
        expect(result.mutants).to.equal(statuses.length);
      });
    }

    it("counts each kind of mutant", () => {
      expect(scoreOf(["Killed", "Timeout", "Survived", "NoCoverage", "Ignored", "CompileError"])).to.deep.include({
        killed: 2,
        survived: 1,
        noCoverage: 1,
        ignored: 1,
        errors: 1,
      });
    });
  });

  it("every part has a threshold of at least 85, and all but worker at least 90 (the issue's bar)", () => {
    for (const part of PARTS) expect(THRESHOLDS[part], part).to.be.at.least(part === "worker" ? 85 : 90);
  });

  it("the table marks a part below its threshold", () => {
    const below = scoreOf([...Array<MutantStatus>(8).fill("Killed"), "Survived", "Survived"]);
    const above = scoreOf([...Array<MutantStatus>(19).fill("Killed"), "Survived"]);
    const table = scoreTable([
      { part: "pool", score: below },
      { part: "shared", score: above },
    ]);
    expect(table).to.contain(`| pool | 10 | 80.0 % | 80.0 % | 0 | ${THRESHOLDS.pool} % | BELOW |`);
    expect(table).to.contain(`| shared | 20 | 95.0 % | 95.0 % | 0 | ${THRESHOLDS.shared} % | ok |`);
  });

  describe("the listing of equivalent mutants (stryker/equivalent-ignorer.mjs)", () => {
    const code = "export function f(a: number) {\n  log.info({ a });\n  return a >= 0;\n}\n";
    const file = "functions/shared/example.ts";

    it("ignores the listed code, whitespace-insensitively, with the entry's reason", async () => {
      const { matchEntry } = await loadIgnorer();
      const entries = [{ file, code: "log.info({a})".replace("{a}", "{   a }"), reason: "a log field" }];
      expect(matchEntry(nodeOf(file, code, "log.info({ a })"), entries)).to.equal("Equivalent (stryker/equivalent-mutants/): a log field");
    });

    it("ignores nothing else: other code of the file, and the same code in another file", async () => {
      const { matchEntry } = await loadIgnorer();
      const entries = [{ file, code: "log.info({ a })", reason: "a log field" }];
      expect(matchEntry(nodeOf(file, code, "a >= 0"), entries)).to.equal(undefined);
      expect(matchEntry(nodeOf("functions/shared/other.ts", code, "log.info({ a })"), entries)).to.equal(undefined);
    });

    it("names an entry that matched nothing (stale), and one that matched more places than it says (new code it would hide)", async () => {
      const { matchEntry, misplacedEntries } = await loadIgnorer();
      const twice = "export const a = [];\nexport const b = [];\nexport const c = x >= 0;\n";
      const once = { file, code: "x >= 0", reason: "r" };
      const stale = { file, code: "x > 0", reason: "r" };
      const grown = { file, code: "[]", reason: "r" };
      const counted = { file: "functions/shared/counted.ts", code: "[]", reason: "r", places: 2 };
      const elsewhere = { file: "functions/pool/x.ts", code: "nope", reason: "r" };
      const entries = [once, stale, grown, counted, elsewhere];
      matchEntry(nodeOf(file, twice, "x >= 0"), entries);
      const second = twice.indexOf("[]", twice.indexOf("[]") + 1);
      for (const [f, start] of [
        [file, twice.indexOf("[]")],
        [file, second],
        [counted.file, twice.indexOf("[]")],
        [counted.file, second],
      ] as const) {
        matchEntry({ node: { start, end: start + 2 }, hub: { file: { opts: { filename: path.join(REPO_ROOT, f) }, code: twice } } }, entries);
      }
      expect(misplacedEntries("functions/shared/", entries)).to.deep.equal([
        { entry: stale, found: 0, expected: 1 },
        { entry: grown, found: 2, expected: 1 },
      ]);
    });

    it("refuses a listing whose places is not a whole number of at least 1", async () => {
      const { readEntries } = await loadIgnorer();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "equivalents-"));
      fs.writeFileSync(path.join(dir, "fleet.json"), JSON.stringify({ equivalents: [{ file, code: "x", reason: "ok", places: 0 }] }));
      expect(() => readEntries(dir)).to.throw(/fleet\.json: equivalents\[0\]\.places must be a whole number of at least 1/);
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it("refuses a listing whose entry lacks a reason, naming the file and the entry", async () => {
      const { readEntries } = await loadIgnorer();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "equivalents-"));
      fs.writeFileSync(
        path.join(dir, "pool.json"),
        JSON.stringify({
          equivalents: [
            { file, code: "x", reason: "ok" },
            { file, code: "y", reason: " " },
          ],
        }),
      );
      expect(() => readEntries(dir)).to.throw(/pool\.json: equivalents\[1\]\.reason must be a non-empty string/);
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it("every listing in the repository is valid, names a file of its own part that exists, and code that file holds", async () => {
      const { readEntries, LISTINGS } = await loadIgnorer();
      const entries = readEntries();
      for (const listing of fs.readdirSync(LISTINGS)) {
        const part = path.basename(listing, ".json");
        expect(PARTS as readonly string[], listing).to.include(part);
      }
      const squash = (s: string) => s.replace(/\s+/g, " ").trim();
      for (const entry of entries) {
        const source = fs.readFileSync(path.join(REPO_ROOT, entry.file), "utf8");
        expect(squash(source), `${entry.file} holds ${entry.code}`).to.contain(squash(entry.code));
      }
    });
  });

  describe("the Mocha 12 shim (stryker/mocha12-cli-paths.cjs)", () => {
    const mochaRoot = path.dirname(require.resolve("mocha/package.json"));

    it("is still needed: the runner requires Mocha's CLI internals without an extension, and Mocha 12 names them .cjs (delete the shim when this fails)", () => {
      const runner = fs.readFileSync(path.join(REPO_ROOT, "node_modules/@stryker-mutator/mocha-runner/dist/src/lib-wrapper.js"), "utf8");
      expect(runner).to.contain("require(`${mochaRoot}/lib/cli/run-helpers`)");
      expect(fs.existsSync(path.join(mochaRoot, "lib/cli/run-helpers.js"))).to.equal(false);
      expect(fs.existsSync(path.join(mochaRoot, "lib/cli/run-helpers.cjs"))).to.equal(true);
    });

    it("resolves exactly those internals to .cjs, and leaves every other failed resolution failing", async () => {
      await import(path.join(REPO_ROOT, "stryker/mocha12-cli-paths.cjs"));
      expect(require.resolve(path.join(mochaRoot, "lib/cli/run-helpers"))).to.equal(path.join(mochaRoot, "lib/cli/run-helpers.cjs"));
      expect(require.resolve(path.join(mochaRoot, "lib/cli/options"))).to.equal(path.join(mochaRoot, "lib/cli/options.cjs"));
      expect(() => require.resolve(path.join(mochaRoot, "lib/cli/no-such-file"))).to.throw(/Cannot find module/);
    });
  });

  it("is run by `npm run mutate` on Node 22, and not by `npm test`", () => {
    const { scripts } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(scripts.mutate).to.equal("bash scripts/with-node.sh tsx scripts/mutate.ts");
    expect(scripts["test:tiers"]).to.not.contain("mutate");
  });

  it("runs weekly and on demand in CI, keeping the HTML report even when a part fails", () => {
    const w = parse(fs.readFileSync(path.join(REPO_ROOT, ".github/workflows/mutation.yml"), "utf8")) as {
      on: { schedule: Array<{ cron: string }>; workflow_dispatch: unknown };
      jobs: { mutate: { steps: Array<{ run?: string; uses?: string; if?: string; with?: Record<string, string> }> } };
    };
    expect(w.on.schedule).to.have.length(1);
    expect(w.on.schedule[0]!.cron.split(" "))
      .to.have.length(5)
      .and.satisfy((f: string[]) => f[4] !== "*");
    expect(w.on).to.have.property("workflow_dispatch");
    const steps = w.jobs.mutate.steps;
    expect(steps.some((s) => s.run?.includes("npm run mutate"))).to.equal(true);
    const upload = steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"));
    expect(upload).to.deep.include({ if: "always()" });
    expect(upload?.with?.path).to.equal("reports/mutation/");
  });
});
