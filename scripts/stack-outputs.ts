/**
 * The names of the stack outputs, as the program returns them: the program runs under the plan's
 * Pulumi mocks (no AWS, no CLI) and this prints the keys of the object it returns, as JSON.
 *
 *   tsx scripts/stack-outputs.ts <stack>
 *
 * Run in a process of its own: setMocks is global. `npm run docs` and test/docs use it.
 */
import * as pulumi from "@pulumi/pulumi";
import { PLAN_BUNDLE_CACHE_DIR, REPO_ROOT, useBundleCache } from "../infra/bundle";
import { createMocks } from "../plan/mocks";
import { installRecorder } from "../plan/record";
import { readStackFiles, resolveProgram } from "../plan/stack-files";

async function main(stack: string): Promise<void> {
  process.setSourceMapsEnabled(false);
  const files = readStackFiles(REPO_ROOT, stack);
  useBundleCache(PLAN_BUNDLE_CACHE_DIR);
  pulumi.runtime.setAllConfig(files.config, files.secretKeys);
  await pulumi.runtime.setMocks(createMocks(files.config["aws:region"] ?? "us-east-1"), files.project, stack, false);
  const recorder = installRecorder();
  // Loaded only now, after setMocks: a static import would run the program before.
  const mod = (await import(resolveProgram(REPO_ROOT, files.main))) as { default?: unknown };
  const outputs = typeof mod.default === "function" ? await (mod.default as () => unknown)() : mod;
  // Every registration settled, so the Pulumi runtime finds no promise left running at exit.
  await recorder.settle();
  process.stdout.write(`${JSON.stringify(Object.keys((outputs ?? {}) as object))}\n`);
}

const stack = process.argv[2];
if (!stack) {
  process.stderr.write("usage: tsx scripts/stack-outputs.ts <stack>\n");
  process.exit(2);
}
main(stack).then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`stack-outputs: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
