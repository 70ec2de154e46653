/**
 * `npm run mutate -- [part…]`: StrykerJS over one part's function code (or every part's), with
 * the unit tests of test/functions. Prints each part's score and exits 1 when a part is below its
 * threshold (stryker/parts.ts). Reports: reports/mutation/<part>/index.html and mutation.json.
 *
 * `MUTATE_FILES=functions/pool/claim.ts[,…] npm run mutate -- pool` narrows the run to those files
 * (globs and `file:10-40` line ranges work too) while a survivor is being chased; MUTATE_CONCURRENCY
 * overrides the config's 2 test-runner processes.
 *
 * Not part of `npm test`: a whole run takes tens of minutes. CI runs it weekly
 * (.github/workflows/mutation.yml).
 */
import { createRequire } from "node:module";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { type Part, scoreOf, scoreTable, selectParts, THRESHOLDS } from "../stryker/parts";

const ROOT = path.resolve(__dirname, "..");
const CLI_PATHS_SHIM = path.join(ROOT, "stryker/mocha12-cli-paths.cjs");
const IGNORER = path.join(ROOT, "stryker/equivalent-ignorer.mjs");

type Ignorer = Pick<typeof import("../stryker/equivalent-ignorer.mjs"), "misplacedEntries">;

async function mutatePart(part: Part) {
  // Imported late, after the shim: Stryker loads its mocha-runner plugin in this process too.
  const { Stryker } = await import("@stryker-mutator/core");
  const report = path.join(ROOT, "reports/mutation", part);
  const stryker = new Stryker({
    configFile: path.join(ROOT, "stryker.config.mjs"),
    ...(process.env.MUTATE_CONCURRENCY ? { concurrency: Number(process.env.MUTATE_CONCURRENCY) } : {}),
    mutate: process.env.MUTATE_FILES ? process.env.MUTATE_FILES.split(",") : [`functions/${part}/**/*.ts`],
    thresholds: { high: 95, low: THRESHOLDS[part], break: THRESHOLDS[part] },
    htmlReporter: { fileName: path.join(report, "index.html") },
    jsonReporter: { fileName: path.join(report, "mutation.json") },
  });
  const results = await stryker.runMutationTest();
  // The same module instance Stryker loaded as a plugin (one ESM cache per process): it recorded
  // which listed equivalents the instrumenter met.
  const ignorer = (await import(pathToFileURL(IGNORER).href)) as Ignorer;
  return { score: scoreOf(results.map((r) => r.status)), misplaced: process.env.MUTATE_FILES ? [] : ignorer.misplacedEntries(`functions/${part}/`) };
}

async function main(): Promise<number> {
  let parts: Part[];
  try {
    parts = selectParts(process.argv.slice(2));
  } catch (error) {
    console.error(`mutate: ${(error as Error).message}`);
    return 2;
  }
  // In this process (Stryker loads its plugins here) and, through NODE_OPTIONS, in every test
  // runner process it starts.
  createRequire(__filename)(CLI_PATHS_SHIM);
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, `--require ${CLI_PATHS_SHIM}`].filter(Boolean).join(" ");
  const rows = [];
  let failed = false;
  for (const part of parts) {
    console.log(`\nmutate: ${part} (functions/${part}), threshold ${THRESHOLDS[part]} %`);
    const { score, misplaced } = await mutatePart(part);
    rows.push({ part, score });
    console.log(`mutate: ${part} scored ${score.score.toFixed(1)} % (${score.coveredScore.toFixed(1)} % on covered code)`);
    for (const { entry, found, expected } of misplaced) {
      failed = true;
      const where =
        found === 0
          ? "no longer has that code (or it sits inside another listed equivalent)"
          : `has it in ${found} places, the entry says ${expected}: review the new places, then set "places"`;
      console.error(`mutate: equivalent \`${entry.code}\` in stryker/equivalent-mutants/${part}.json: ${entry.file} ${where}`);
    }
  }
  console.log(`\n${scoreTable(rows)}\n`);
  const below = rows.filter(({ part, score }) => score.score < THRESHOLDS[part]).map(({ part }) => part);
  if (below.length > 0) {
    console.error(`mutate: below threshold: ${below.join(", ")}`);
    failed = true;
  }
  return failed ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  },
);
