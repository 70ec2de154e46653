/**
 * The local platform, open to `npm run ops`: the operator endpoint (aws/operator-endpoint.ts) in
 * front of moto, judging every call against the stack's declared operator policy, and the files
 * `ops --local` reads: the stack outputs as the program returned them, with queue URLs on the
 * endpoint's origin (SDK v3 sends an SQS call to its QueueUrl's origin, so the URLs must point
 * there for the judge to see the calls), and where the endpoint listens.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { MOCK_ACCOUNT_ID } from "../plan/mocks";
import { OperatorEndpoint, type OperatorEndpointOptions } from "./aws/operator-endpoint";
import { type PolicyStatement, statementsOf } from "./aws/operator-iam";
import { MessageMoveTasks } from "./aws/sqs-move-tasks";
import type { LocalPlatform } from "./platform";

/** The operator policy's logical name in the program (infra/components/operator-policy.ts). */
export const OPERATOR_POLICY_RESOURCE = "operator-policy";

export interface OpsEndpoint {
  endpoint: string;
  /** `.local/<stack>/outputs.json` and `.local/<stack>/ops.json`. */
  outputsFile: string;
  opsFile: string;
  /** `.local/<stack>/operator-policy.json`: the policy the judge holds calls to. */
  policyFile: string;
  stop(): Promise<void>;
}

/** The declared operator policy's statements, from the deploy's recording. */
export function declaredOperatorStatements(platform: LocalPlatform): PolicyStatement[] {
  const policy = platform.topology.resources.find((r) => r.type === "aws:iam/policy:Policy" && r.name === OPERATOR_POLICY_RESOURCE);
  if (!policy) throw new Error(`the program declares no ${OPERATOR_POLICY_RESOURCE}: ops has no policy to be judged by`);
  return statementsOf(policy.inputs.policy);
}

/**
 * The age of each queue's oldest message, from the depth sampler's rounds: simulated seconds since
 * the queue was last seen empty, the oldest message's age when no message left meanwhile, an upper
 * bound otherwise (the sampler sees depths, not messages). Null when empty.
 */
function queueAges(platform: LocalPlatform): { ageSeconds: (name: string) => number | null; stop: () => void } {
  const since = new Map<string, number>();
  const stop =
    platform.depths?.subscribe((round) => {
      for (const [name, d] of round.depths) {
        if (d.visible + d.inFlight + d.delayed === 0) since.delete(name);
        else if (!since.has(name)) since.set(name, round.simTimeMs);
      }
    }) ?? (() => undefined);
  const ageSeconds = (name: string) => {
    const at = since.get(name);
    return at === undefined ? null : Math.max(0, Math.round((platform.clock.now() - at) / 1000));
  };
  return { ageSeconds, stop };
}

export async function startOpsEndpoint(platform: LocalPlatform, workDir: string): Promise<OpsEndpoint> {
  const { topology } = platform;
  const outputs = topology.stackOutputs;
  if (!outputs) throw new Error("the deploy recorded no stack outputs: ops has nothing to read");
  fs.mkdirSync(workDir, { recursive: true });
  const policy = writtenOperatorPolicy(platform, workDir);
  const motoOrigin = platform.moto.endpoint;
  const queues = topology.queues.map((q) => ({
    name: q.name,
    arn: q.arn,
    url: `${motoOrigin}${new URL(q.url).pathname}`,
    ...(q.redrive ? { deadLetterTargetArn: q.redrive.deadLetterTargetArn } : {}),
  }));
  const moveTasks = new MessageMoveTasks({ sqs: platform.aws.sqsDirect, queues, direct: platform.directSends });
  const ages = queueAges(platform);
  const endpoint = new OperatorEndpoint({
    target: motoOrigin,
    region: topology.region,
    account: MOCK_ACCOUNT_ID,
    statements: policy.statements,
    moveTasks,
    direct: platform.directSends,
    queues,
    ...workerServiceView(platform),
    oldestAgeSeconds: ages.ageSeconds,
    ec2: platform.aws.ec2,
    autoscaling: platform.aws.autoscaling,
  });
  const url = await endpoint.start();
  const files = writeOpsFiles(workDir, outputs, { endpoint: url, policy: policy.file, moto: motoOrigin });
  return {
    endpoint: url,
    ...files,
    policyFile: policy.file,
    stop: async () => {
      ages.stop();
      await moveTasks.stop();
      await endpoint.stop();
      fs.rmSync(files.opsFile, { force: true });
    },
  };
}

/**
 * The judge holds calls to this file, written from the declared policy and read again whenever it
 * changes: an operator (or a test) can see what the policy allows, and try what a narrower one refuses.
 */
function writtenOperatorPolicy(platform: LocalPlatform, workDir: string): { file: string; statements: () => PolicyStatement[] } {
  const file = path.join(workDir, "operator-policy.json");
  fs.writeFileSync(file, `${JSON.stringify({ Version: "2012-10-17", Statement: declaredOperatorStatements(platform) }, null, 2)}\n`);
  let statements: PolicyStatement[] = [];
  let readAt = -1;
  return {
    file,
    statements: () => {
      const mtime = fs.statSync(file).mtimeMs;
      if (mtime !== readAt) {
        statements = statementsOf(fs.readFileSync(file, "utf8"));
        readAt = mtime;
      }
      return statements;
    },
  };
}

/** The worker service's tasks as ECS would list them, with their agents' protection; nothing without a service. */
function workerServiceView(platform: LocalPlatform): Pick<OperatorEndpointOptions, "worker"> {
  const { topology, worker } = platform;
  const service = topology.services[0];
  const cluster = topology.clusters.find((c) => c.arn === service?.clusterArn) ?? topology.clusters[0];
  if (!service || !cluster || !worker) return {};
  const tasks = () =>
    worker.tasks().map((t) => {
      const s = t.agent.state();
      // The agent's own ARN names no cluster; as ECS would, the task is on the service's cluster.
      const taskArn = `arn:aws:ecs:${topology.region}:${MOCK_ACCOUNT_ID}:task/${cluster.name}/${t.agent.id}`;
      return { taskArn, protectionEnabled: s.protectionEnabled, expiresAtMs: s.expiresAtMs };
    });
  return { worker: { clusterName: cluster.name, serviceName: service.name, tasks } };
}

/** The outputs as the program returned them, but with each queue's URL on the endpoint; and where `ops --local` finds them. */
function writeOpsFiles(
  workDir: string,
  outputs: Record<string, unknown>,
  ops: { endpoint: string; policy: string; moto: string },
): Pick<OpsEndpoint, "outputsFile" | "opsFile"> {
  const opsQueues = Object.fromEntries(
    Object.entries((outputs.opsQueues ?? {}) as Record<string, { url: string }>).map(([k, q]) => [
      k,
      { ...q, url: `${ops.endpoint}${new URL(q.url).pathname}` },
    ]),
  );
  const outputsFile = path.join(workDir, "outputs.json");
  const opsFile = path.join(workDir, "ops.json");
  fs.writeFileSync(outputsFile, `${JSON.stringify({ ...outputs, opsQueues }, null, 2)}\n`);
  fs.writeFileSync(opsFile, `${JSON.stringify({ outputs: outputsFile, endpoint: ops.endpoint, policy: ops.policy, moto: ops.moto }, null, 2)}\n`);
  return { outputsFile, opsFile };
}

/**
 * `npm start -- --keep`: after the scenarios, the platform stays up for `npm run ops -- … --local`
 * until Ctrl-C (or SIGTERM), then everything stops as after any run.
 */
export async function keepForOps(platform: LocalPlatform, workDir: string, note: (line: string) => void): Promise<void> {
  const ops = await startOpsEndpoint(platform, workDir);
  const stack = platform.topology.stack;
  note(`kept up for ops: npm run ops -- status --stack ${stack} --local (the judge holds calls to ${path.relative(process.cwd(), ops.policyFile)})`);
  note("Ctrl-C stops the platform");
  await new Promise<void>((resolve) => {
    const done = () => {
      process.removeListener("SIGINT", done);
      process.removeListener("SIGTERM", done);
      resolve();
    };
    process.once("SIGINT", done);
    process.once("SIGTERM", done);
  });
  await ops.stop();
}
