/**
 * Deploys the Pulumi program into moto (the mocks of this folder, ./index.ts) and derives the local
 * runtime's Topology (./topology-types.ts) from the recording (./topology-parsers.ts): the program
 * is the single source of truth.
 *
 * `deployLocally` may run ONCE per process: `pulumi.runtime.setMocks` installs a global monitor
 * and the program module registers its resources when first imported. Tests run it in a child
 * process (test/local/helpers/provision-child.ts).
 */
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { REPO_ROOT } from "../../infra/bundle";
import { installRecorder } from "../../plan/record";
import { readStackFiles } from "../../plan/stack-files";
import type { RecordedResource } from "../../policy/testing/types";
import { createMotoMocks, type MotoMocksOptions, type ProvisionOutcome } from ".";
import * as parse from "./topology-parsers";
import type { Topology } from "./topology-types";

/** The mocks' options (moto's endpoints, where the Lambda bundles go) but the region, which is the stack's. */
export interface DeployLocallyOptions extends Omit<MotoMocksOptions, "region"> {
  stack: string;
  /** Program entry; default Pulumi.yaml's `main`. Relative paths are from the repository root. */
  program?: string;
}

let deployed = false;

export async function deployLocally(opts: DeployLocallyOptions): Promise<Topology> {
  if (deployed) {
    throw new Error(
      "deployLocally may run only once per process: pulumi.runtime.setMocks is global and the program registers its resources on first import. Run it in a fresh process.",
    );
  }
  deployed = true;

  const files = readStackFiles(REPO_ROOT, opts.stack);
  const program = path.resolve(REPO_ROOT, opts.program ?? files.main);
  const region = files.config["aws:region"] ?? "us-east-1";
  const mocks = createMotoMocks({ region, endpoint: opts.endpoint, sqsEndpoint: opts.sqsEndpoint, codeDir: opts.codeDir });

  // A failed registration surfaces in the program as rejected outputs, i.e. unhandled
  // rejections wrapped in Pulumi's serialization errors: collect them while loading, and
  // report the mocks' own error, which names the resource.
  const failures: unknown[] = [];
  const onFailure = (reason: unknown) => failures.push(reason);
  process.on("unhandledRejection", onFailure);
  try {
    pulumi.runtime.setAllConfig(files.config, files.secretKeys);
    await pulumi.runtime.setMocks(mocks, files.project, opts.stack, false);
    const recorder = installRecorder();
    // Loaded only now, after setMocks: a static import would run the program before it.
    const mod = (await import(program)) as { default?: unknown };
    const returned = typeof mod.default === "function" ? await (mod.default as () => unknown)() : undefined;
    const resources = await recorder.settle();
    const failure = mocks.failures()[0] ?? failures[0];
    if (failure !== undefined) throw failure;
    const topology = buildTopology({ project: files.project, stack: opts.stack, region, resources, outcomes: mocks.outcomes(), codeDir: opts.codeDir });
    const stackOutputs = returned === undefined ? undefined : await resolvedOutputs(returned);
    return stackOutputs === undefined ? topology : { ...topology, stackOutputs };
  } catch (err) {
    throw mocks.failures()[0] ?? err;
  } finally {
    process.off("unhandledRejection", onFailure);
  }
}

/**
 * The program's returned outputs with every Output resolved (under mocks, each resolves once its
 * resource is created). An output that never resolves leaves the topology without outputs rather
 * than hanging the deploy: only `ops` reads them.
 */
function resolvedOutputs(returned: unknown, waitMs = 20_000): Promise<Record<string, unknown> | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), waitMs);
    timer.unref();
    pulumi.output(returned as pulumi.Input<Record<string, unknown>>).apply((v: Record<string, unknown>) => {
      clearTimeout(timer);
      resolve(v ?? {});
      return v;
    });
  });
}

/**
 * Splits custom resources into created (in moto) and uncreated (recorded only). Outcomes are
 * keyed by type and logical name, which is all the mocks see; a program that reuses a logical
 * name for two resources of one type would collide in moto's physical names first.
 */
export function splitCreated(resources: RecordedResource[], outcomes: ProvisionOutcome[]): Pick<Topology, "created" | "uncreated"> {
  const created = new Set(outcomes.filter((x) => x.created).map((x) => `${x.type}\0${x.name}`));
  const custom = resources.filter((r) => r.custom);
  return {
    created: custom.filter((r) => created.has(`${r.type}\0${r.name}`)).map((r) => r.urn),
    uncreated: custom.filter((r) => !created.has(`${r.type}\0${r.name}`)).map((r) => ({ urn: r.urn, type: r.type })),
  };
}

export function buildTopology(
  args: Pick<Topology, "project" | "stack" | "region" | "resources"> & { outcomes: ProvisionOutcome[]; codeDir: string },
): Topology {
  const { resources } = args;
  const functions = parse.functionsFrom(resources, args.codeDir);
  const queues = parse.queuesFrom(resources);
  return {
    project: args.project,
    stack: args.stack,
    region: args.region,
    resources,
    functions,
    mappings: parse.mappingsFrom(resources, queues, functions),
    queues,
    schedules: parse.schedulesFrom(resources),
    instances: parse.instancesFrom(resources),
    fleets: parse.fleetsFrom(resources),
    taskDefinitions: parse.taskDefinitionsFrom(resources),
    services: parse.servicesFrom(resources),
    tables: parse.tablesFrom(resources),
    clusters: parse.clustersFrom(resources),
    topics: parse.topicsFrom(resources),
    alarms: parse.alarmsFrom(resources),
    ...splitCreated(resources, args.outcomes),
  };
}
