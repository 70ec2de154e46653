// @ts-check
/**
 * StrykerJS configuration for the function code: the shared base. `npm run mutate -- <part>`
 * (scripts/mutate.ts) narrows `mutate` to one part and sets its threshold and report paths.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: "mocha",
  // Each mutant runs only the tests that reach it: the unit tiers of every part, because a part's
  // code is also driven by the other parts' tests (shared code above all).
  coverageAnalysis: "perTest",
  mochaOptions: {
    spec: ["test/functions/**/*.test.ts"],
    // tsx's loader, registered by require(esm) (Node >= 22): TypeScript sources and tests run as
    // they do under `npm run test:unit` (`--import=tsx`).
    require: ["tsx"],
  },
  mutate: ["functions/**/*.ts"],
  // The mutants no test should kill, listed with their reasons in stryker/equivalent-mutants/.
  plugins: ["@stryker-mutator/mocha-runner", "./stryker/equivalent-ignorer.mjs"],
  ignorers: ["equivalent-mutants"],
  // The sandbox holds what the unit tests load; not the 300 MB moto venv or the local runs' state.
  ignorePatterns: ["/*", "!/functions", "!/test", "!/infra", "!/policy", "/policy/node_modules", "!/package.json", "!/tsconfig.json"],
  reporters: ["clear-text", "progress", "html", "json"],
  // The console shows each survivor with its diff, not the list of every test and what it killed.
  clearTextReporter: { reportTests: false },
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
  concurrency: 2,
};
