/**
 * The offline plan: Pulumi's preview and policy check without credentials or the CLI.
 *
 *   npm run plan -- --stack <name> [--first-preview] [--json] [--sarif <file>] [--export <file>] [--program <file>]
 *
 * Without --first-preview it plans an update of an existing stack: every output known. With it, a
 * stack that does not exist yet, as the engine would preview it (policy/testing/engine.ts).
 * `--export <file>` writes the stack as `pulumi stack export` would print it after `pulumi up`
 * (plan/export.ts), for `pulumi policy analyze --file` and `pulumi stack import --file`.
 *
 * Exit codes: 0 no mandatory violation, 1 at least one, 2 the program or its config failed.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { flushAndExit } from "../functions/shared/exit";
import { PlanInputError, readStackFiles, resolveProgram } from "./stack-files";
import type { PolicyPackConfig } from "../policy/testing/types";

const USAGE = "usage: npm run plan -- --stack <name> [--first-preview] [--json] [--sarif <file>] [--export <file>] [--program <file>]";

async function main(argv: string[]): Promise<number> {
  // Pulumi takes `new Error().stack` for every promise it creates; mapping each through tsx's
  // source maps cost about a second of CPU per plan. Only PLAN_DEBUG prints a stack.
  // SARIF needs them: a violation points at the TypeScript line that declared the resource.
  if (!process.env.PLAN_DEBUG && !argv.includes("--sarif")) process.setSourceMapsEnabled(false);
  const started = Date.now();
  let values: { stack?: string; json?: boolean; program?: string; help?: boolean; "first-preview"?: boolean; sarif?: string; export?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        stack: { type: "string" },
        json: { type: "boolean" },
        program: { type: "string" },
        "first-preview": { type: "boolean" },
        sarif: { type: "string" },
        export: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (err) {
    return fail(`${(err as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!values.stack) return fail(`--stack is required\n${USAGE}`);
  // A stack export is the state after a deploy: a first preview has none.
  if (values.export && values["first-preview"]) return fail(`--export writes the state after a deploy, so it does not go with --first-preview\n${USAGE}`);

  const programFailures: unknown[] = [];
  process.on("unhandledRejection", (reason) => programFailures.push(reason));
  process.on("uncaughtException", (err) => programFailures.push(err));

  try {
    // Loaded only past the usage checks: Pulumi alone takes about a second to load.
    const [
      pulumi,
      { bundleSizes, PLAN_BUNDLE_CACHE_DIR, REPO_ROOT, useBundleCache },
      { policies },
      { evaluatePolicies },
      { createMocks },
      { installRecorder },
      { planDocument, renderHuman },
      engine,
    ] = await Promise.all([
      import("@pulumi/pulumi"),
      import("../infra/bundle.js"),
      import("../policy/policies.js"),
      import("../policy/testing/evaluate.js"),
      import("./mocks.js"),
      import("./record.js"),
      import("./render.js"),
      import("../policy/testing/engine.js"),
    ]);
    const files = readStackFiles(REPO_ROOT, values.stack);
    const program = resolveProgram(REPO_ROOT, values.program ?? files.main);
    const region = files.config["aws:region"] ?? "us-east-1";

    // Bundles are rebuilt only when an input changed (see useBundleCache).
    useBundleCache(PLAN_BUNDLE_CACHE_DIR);
    pulumi.runtime.setAllConfig(files.config, files.secretKeys);
    // PLAN_SDK_PREVIEW=1 (with --first-preview): let the SDK itself make the unknowns, with the mocks
    // answering as providers do on a first preview; tests compare it with the engine model.
    const sdkPreview = values["first-preview"] === true && process.env.PLAN_SDK_PREVIEW === "1";
    await pulumi.runtime.setMocks(createMocks(region, { preview: sdkPreview }), files.project, values.stack, sdkPreview);
    const recorder = installRecorder();

    // The program is loaded only now, after setMocks: a static import would run it before.
    const mod = (await import(program)) as { default?: unknown };
    // Pulumi calls a program that exports a function (`export = async () => …`); what it returns are the stack's outputs.
    const returned = typeof mod.default === "function" ? await (mod.default as () => unknown)() : undefined;
    const resources = await recorder.settle();
    if (programFailures.length > 0) throw programFailures[0];

    // The pack judges what the engine would hand it: inputs after the provider's Check, and on a
    // first preview every value the providers compute at create time unknown.
    const firstPreview = values["first-preview"] === true;
    const view = sdkPreview ? engine.updateView(resources) : firstPreview ? engine.firstPreview(resources) : engine.updateView(resources);
    const policyConfig = readPolicyConfig(REPO_ROOT, values.stack);
    const violations = await evaluatePolicies(view, policies, {
      config: policyConfig,
      stackTags: {},
    });
    const doc = planDocument(files.project, values.stack, firstPreview ? view : resources, violations, { firstPreview });
    // The whole view the pack judged (outputs included), for tests of the engine model; not part of --json.
    if (process.env.PLAN_VIEW_FILE) fs.writeFileSync(process.env.PLAN_VIEW_FILE, JSON.stringify(view));
    if (values.export) {
      const { writeStackExport } = await import("./export-file.js");
      await writeStackExport(path.resolve(process.cwd(), values.export), {
        project: files.project,
        stack: values.stack,
        resources: engine.updateView(resources),
        config: files.config,
        returned,
      });
    }
    if (values.sarif) {
      const { sarifLog } = await import("./sarif.js");
      const version = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { version: string }).version;
      const log = sarifLog({ stack: values.stack, mode: doc.mode, violations, resources, policies, root: REPO_ROOT, toolVersion: version });
      fs.writeFileSync(path.resolve(process.cwd(), values.sarif), `${JSON.stringify(log, null, 2)}\n`);
    }
    if (values.json) {
      process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    } else {
      process.stdout.write(`${renderHuman(doc, { bundles: bundleSizes(), wallMs: Date.now() - started })}\n`);
    }
    return doc.summary.mandatory > 0 ? 1 : 0;
  } catch (err) {
    return fail(describeFailure(err));
  }
}

function readPolicyConfig(root: string, stack: string): PolicyPackConfig | undefined {
  const file = path.join(root, "policy", `config.${stack}.json`);
  if (!fs.existsSync(file)) return undefined;
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as PolicyPackConfig;
  } catch (err) {
    throw new PlanInputError(`${path.relative(root, file)}: ${(err as Error).message}`);
  }
}

function describeFailure(err: unknown): string {
  if (err instanceof Error) {
    // Config and input errors carry their own clear message; a stack trace would bury it.
    if (err.name === "StackConfigError" || err.name === "PlanInputError") return err.message;
    return `the program failed: ${err.message}${process.env.PLAN_DEBUG ? `\n${err.stack}` : ""}`;
  }
  return `the program failed: ${String(err)}`;
}

function fail(message: string): number {
  process.stderr.write(`plan: ${message}\n`);
  return 2;
}

main(process.argv.slice(2)).then(flushAndExit, (err: unknown) => flushAndExit(fail(describeFailure(err))));
