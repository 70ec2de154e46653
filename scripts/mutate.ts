/**
 * `npm run mutate -- [part…]`: StrykerJS over one part's function code (or every part's), with
 * the unit tests of test/functions. Prints each part's score and exits 1 when a part is below its
 * threshold (stryker/parts.ts). Reports: reports/mutation/<part>/index.html and mutation.json.
 *
 * Not part of `npm test`: a whole run takes tens of minutes. CI runs it weekly
 * (.github/workflows/mutation.yml).
 */
import { createRequire } from "node:module";
import * as path from "node:path";
import { type Part, scoreOf, scoreTable, selectParts, THRESHOLDS } from "../stryker/parts";

const ROOT = path.resolve(__dirname, "..");
const CLI_PATHS_SHIM = path.join(ROOT, "stryker/mocha12-cli-paths.cjs");

async function mutatePart(part: Part) {
  // Imported late, after the shim: Stryker loads its mocha-runner plugin in this process too.
  const { Stryker } = await import("@stryker-mutator/core");
  const report = path.join(ROOT, "reports/mutation", part);
  const stryker = new Stryker({
    configFile: path.join(ROOT, "stryker.config.mjs"),
    mutate: [`functions/${part}/**/*.ts`],
    thresholds: { high: 95, low: THRESHOLDS[part], break: THRESHOLDS[part] },
    htmlReporter: { fileName: path.join(report, "index.html") },
    jsonReporter: { fileName: path.join(report, "mutation.json") },
    testRunnerNodeArgs: ["--require", CLI_PATHS_SHIM],
  });
  const results = await stryker.runMutationTest();
  return scoreOf(results.map((r) => r.status));
}

async function main(): Promise<number> {
  let parts: Part[];
  try {
    parts = selectParts(process.argv.slice(2));
  } catch (error) {
    console.error(`mutate: ${(error as Error).message}`);
    return 2;
  }
  createRequire(__filename)(CLI_PATHS_SHIM);
  const rows = [];
  for (const part of parts) {
    console.log(`\nmutate: ${part} (functions/${part}), threshold ${THRESHOLDS[part]} %`);
    const score = await mutatePart(part);
    rows.push({ part, score });
    console.log(`mutate: ${part} scored ${score.score.toFixed(1)} % (${score.coveredScore.toFixed(1)} % on covered code)`);
  }
  console.log(`\n${scoreTable(rows)}\n`);
  const below = rows.filter(({ part, score }) => score.score < THRESHOLDS[part]).map(({ part }) => part);
  if (below.length > 0) {
    console.error(`mutate: below threshold: ${below.join(", ")}`);
    return 1;
  }
  return 0;
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
