// Lets @stryker-mutator/mocha-runner 10.0.0 load Mocha 12's CLI internals.
//
// The runner requires `mocha/lib/cli/run-helpers` (and `options`, `collect-files`) without an
// extension. Mocha 12 ships them as `.cjs`, which Node's CommonJS resolution does not try, so the
// plugin fails to load ("Cannot find module …/lib/cli/run-helpers") and Stryker then rejects
// `mochaOptions` as unknown. Upstream fix, not yet released: stryker-mutator/stryker-js#6205.
// Delete this file, and the `--require` of it in scripts/mutate.ts, once the runner resolves
// `.cjs` itself (test/ci/mutation.test.ts fails when that happens, as a reminder).
//
// Loaded with `node --require`, in Stryker's own process and its test-runner children. It only
// retries a failed resolution of exactly those three Mocha files with `.cjs`; everything else
// resolves as before.
"use strict";
const Module = require("node:module");

const MOCHA_CLI_INTERNAL = /[\\/]mocha[\\/]lib[\\/]cli[\\/](run-helpers|options|collect-files)$/;
const resolveFilename = Module._resolveFilename;

Module._resolveFilename = function resolveMochaCliInternal(request, ...rest) {
  try {
    return resolveFilename.call(this, request, ...rest);
  } catch (error) {
    if (typeof request === "string" && MOCHA_CLI_INTERNAL.test(request)) {
      return resolveFilename.call(this, `${request}.cjs`, ...rest);
    }
    throw error;
  }
};
