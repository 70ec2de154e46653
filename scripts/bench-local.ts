/**
 * `npx tsx scripts/bench-local.ts`: what the local run's tests must not time.
 * - deploy: the dev stack deployed into moto (program load + every registration created);
 * - cold and warm invocations of each real Lambda bundle in the local sandbox;
 * - the event source's throughput on moto (poll → invoke → delete), direct and through the SQS clock proxy;
 * - the SQS clock proxy's cost per call.
 * Starts its own moto and stops it at the end. Prints tables and writes .bench/local.json.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { REPO_ROOT } from "../infra/bundle";
import { SqsEventSource } from "../local/hosts/event-source";
import { LambdaHost } from "../local/hosts/lambda-host";
import { MotoServer, motoClientEnv } from "../local/aws/moto";
import { SqsClockProxy } from "../local/aws/sqs-clock";
import { deployLocally } from "../local/provision/topology";
import type { LocalFunction, LocalMapping } from "../local/provision/topology-types";

const REGION = "us-east-1";
const SAMPLES = 5;
const MESSAGES = 300;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

async function invocations(functions: LocalFunction[], awsEnv: Record<string, string>, logDir: string) {
  const rows = [];
  for (const fn of functions) {
    const cold: number[] = [];
    const warm: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      // A fresh host per sample: every first invocation is a cold start (module scope, SDK clients).
      const host = new LambdaHost([fn], { awsEnv, logDir });
      const first = await host.invoke(fn.name, { Records: [] });
      cold.push(first.durationMs);
      const again = await host.invoke(fn.name, { Records: [] });
      warm.push(again.durationMs);
      await host.close();
    }
    rows.push({
      function: fn.logicalName,
      bundleKiB: +(fs.statSync(fn.codePath).size / 1024).toFixed(1),
      coldMs: Math.round(median(cold)),
      warmMs: +median(warm).toFixed(1),
    });
  }
  return rows;
}

async function throughput(label: string, sqs: SQSClient, awsEnv: Record<string, string>, logDir: string) {
  const name = `bench-${label}-${Date.now()}`;
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: "30" } }));
  const url = QueueUrl ?? "";
  for (let i = 0; i < MESSAGES; i += 10) {
    await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: url, Entries: Array.from({ length: 10 }, (_, j) => ({ Id: String(j), MessageBody: `m${i + j}` })) }),
    );
  }
  const fn: LocalFunction = {
    urn: "urn:bench",
    logicalName: `bench-noop-${label}`,
    name: `bench-noop-${label}`,
    arn: `arn:aws:lambda:${REGION}:123456789012:function:bench-noop-${label}`,
    codePath: path.join(REPO_ROOT, "test/local/fixtures/sqs-batch.js"),
    handler: "index.handler",
    environment: {},
    timeoutSeconds: 30,
    memoryMb: 128,
  };
  const mapping: LocalMapping = {
    urn: "urn:bench-mapping",
    logicalName: `bench-${label}`,
    functionName: fn.name,
    queueArn: `arn:aws:sqs:${REGION}:123456789012:${name}`,
    queueUrl: url,
    batchSize: 10,
    batchingWindowSeconds: 0,
    maximumConcurrency: 5,
    reportBatchItemFailures: true,
    enabled: true,
  };
  const host = new LambdaHost([fn], { awsEnv, logDir });
  const source = new SqsEventSource(mapping, (event) => host.invoke(fn.name, event), { sqs, pollWaitSeconds: 1 });
  const start = process.hrtime.bigint();
  source.start();
  for (;;) {
    const a = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }),
    );
    if (Number(a.Attributes?.ApproximateNumberOfMessages) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible) === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const stats = source.stats();
  await source.stop();
  await host.close();
  return {
    path: label,
    messages: MESSAGES,
    seconds: +seconds.toFixed(2),
    messagesPerSecond: Math.round(MESSAGES / seconds),
    invocations: stats.invocations,
    messagesPerInvocation: +(stats.received / Math.max(1, stats.invocations)).toFixed(1),
  };
}

async function proxyCost(direct: SQSClient, proxied: SQSClient) {
  const rows = [];
  for (const [label, client] of [
    ["direct", direct],
    ["through the SQS clock proxy", proxied],
  ] as const) {
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: `bench-latency-${label.length}-${Date.now()}` }));
    const times: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t = process.hrtime.bigint();
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: "x", DelaySeconds: 0 }));
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    rows.push({ path: label, sendMessageMedianMs: +median(times).toFixed(2) });
  }
  return rows;
}

async function main(): Promise<void> {
  const moto = new MotoServer();
  const endpoint = await moto.start();
  const proxy = new SqsClockProxy({ target: endpoint, speed: 60 });
  const sqsEndpoint = await proxy.start();
  Object.assign(process.env, motoClientEnv(endpoint, REGION), { AWS_ENDPOINT_URL_SQS: sqsEndpoint });
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-local-"));
  const awsEnv = { ...motoClientEnv(endpoint, REGION), AWS_ENDPOINT_URL_SQS: sqsEndpoint };
  try {
    const t0 = Date.now();
    const topology = await deployLocally({ stack: "dev", endpoint, sqsEndpoint, codeDir: path.join(workDir, "functions") });
    const deploy = { stack: "dev", seconds: +((Date.now() - t0) / 1000).toFixed(1), created: topology.created.length, recordedOnly: topology.uncreated.length };
    console.log("Deploying the dev stack into moto (program load + provisioning)");
    console.table([deploy]);

    const logDir = path.join(workDir, "logs");
    const invoke = await invocations(topology.functions, awsEnv, logDir);
    console.log(`Each real bundle in the local Lambda sandbox (median of ${SAMPLES}; empty SQS event)`);
    console.table(invoke);

    const direct = new SQSClient({ region: REGION, endpoint });
    const proxied = new SQSClient({ region: REGION, endpoint: sqsEndpoint });
    const rates = [await throughput("direct", direct, awsEnv, logDir), await throughput("proxied", proxied, awsEnv, logDir)];
    console.log(`Event source on moto: ${MESSAGES} messages, batch 10, maximum concurrency 5, no-op handler`);
    console.table(rates);

    const latency = await proxyCost(direct, proxied);
    console.log("SQS clock proxy: SendMessage latency, median of 100");
    console.table(latency);

    fs.mkdirSync(path.join(REPO_ROOT, ".bench"), { recursive: true });
    fs.writeFileSync(path.join(REPO_ROOT, ".bench/local.json"), JSON.stringify({ deploy, invoke, throughput: rates, proxy: latency }, null, 2));
  } finally {
    await proxy.stop();
    await moto.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
