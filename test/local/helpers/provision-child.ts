/**
 * Runs deployLocally in its own process (setMocks is once per process) and prints the Topology
 * as JSON on stdout; progress and errors go to stderr.
 *
 *   node --import tsx provision-child.ts [--program <file>] [--twice] <stack> <codeDir>
 *
 * --twice calls deployLocally a second time (the once-per-process guard's test).
 *
 * moto's endpoint comes from AWS_ENDPOINT_URL (the test root hook sets it), SQS's from
 * AWS_ENDPOINT_URL_SQS when set.
 */
import { parseArgs } from "node:util";
import { flushAndExit } from "../../../functions/shared/exit";
import { deployLocally } from "../../../local/provision/topology";

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { twice: { type: "boolean" }, program: { type: "string" } }, allowPositionals: true });
  const [stack, codeDir] = positionals;
  const endpoint = process.env.AWS_ENDPOINT_URL;
  if (!stack || !codeDir || !endpoint) {
    process.stderr.write("usage: provision-child.ts [--program <file>] [--twice] <stack> <codeDir> (with AWS_ENDPOINT_URL set)\n");
    return 2;
  }
  const opts = { stack, endpoint, codeDir, sqsEndpoint: process.env.AWS_ENDPOINT_URL_SQS, program: values.program };
  if (values.twice) {
    // The guard's test: whatever the first call did, the second must refuse.
    await deployLocally(opts).catch((err: unknown) => process.stderr.write(`first call: ${(err as Error).message}\n`));
    await deployLocally(opts);
    return 0;
  }
  const started = Date.now();
  const topology = await deployLocally(opts);
  process.stderr.write(`deployLocally took ${Date.now() - started} ms\n`);
  process.stdout.write(`${JSON.stringify(topology)}\n`);
  return 0;
}

main(process.argv.slice(2)).then(flushAndExit, (err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  flushAndExit(1);
});
