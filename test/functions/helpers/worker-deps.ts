import { DEFAULT_RESEND } from "../../../functions/shared/resend";
import { SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import type { WorkerConfig } from "../../../functions/worker/config";
import type { HandlerRegistry, JobHandler } from "../../../functions/worker/handlers";
import { HEARTBEAT_EXTENSION_FACTOR } from "../../../functions/worker/job";
import { JobLedger, type LedgerStore, MemoryLedgerStore } from "../../../functions/worker/ledger";
import { TaskProtection, type AgentFetch } from "../../../functions/worker/protection";
import type { WorkerDeps } from "../../../functions/worker/worker";
import { RecordingLogger, RecordingMetrics } from "./telemetry";

export const WORK_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/worker";
export const DLQ_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/worker-dlq";

/** A config in milliseconds small enough for unit tests. */
export function testWorkerConfig(overrides: Partial<WorkerConfig> = {}): WorkerConfig {
  return {
    workQueueUrl: WORK_URL,
    quarantineQueueUrl: DLQ_URL,
    concurrency: 1,
    waitTimeSeconds: 0,
    idleWindowMs: 0,
    maxProtectedMs: 3_600_000,
    defaultVisibilitySeconds: 900,
    maxVisibilitySeconds: 3600,
    heartbeatMs: 60_000,
    retryDelaySeconds: 0,
    shutdownGraceMs: 2000,
    abortSettleMs: 200,
    protectionExpiresMinutes: 60,
    executables: {},
    scratchDir: "/tmp",
    agentUri: undefined,
    jobsTable: "worker-jobs",
    metadataUri: undefined,
    ...overrides,
  };
}

const clientOptions = { region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } };

/** Fresh SQS client with aws-sdk-client-mock on that instance, recorders, and a real TaskProtection. */
export { DEFAULT_RESEND };

export function mockedWorkerDeps(
  options: {
    config?: Partial<WorkerConfig>;
    handlers?: Record<string, JobHandler>;
    refreshIntervalMs?: number;
    fetch?: AgentFetch;
    ledgerStore?: LedgerStore;
    holder?: string;
  } = {},
) {
  const sqs = new SQSClient(clientOptions);
  const logger = new RecordingLogger();
  const metrics = new RecordingMetrics();
  const config = testWorkerConfig(options.config);
  const protection = new TaskProtection({
    agentUri: config.agentUri,
    expiresInMinutes: config.protectionExpiresMinutes,
    refreshIntervalMs: options.refreshIntervalMs,
    requestTimeoutMs: 1000,
    fetch: options.fetch,
    logger,
    metrics,
  });
  const handlers: HandlerRegistry = new Map(Object.entries(options.handlers ?? {}));
  // The SDK's give-up is re-sent without real pauses; tests that care pass their own.
  const resend = { ...DEFAULT_RESEND, sleep: async () => undefined };
  const ledgerStore = options.ledgerStore ?? new MemoryLedgerStore();
  const holder = options.holder ?? "task-under-test";
  const ledger = new JobLedger({ store: ledgerStore, holder: () => Promise.resolve(holder), leaseMs: HEARTBEAT_EXTENSION_FACTOR * config.heartbeatMs, resend });
  const deps: WorkerDeps = { sqs, config, handlers, protection, ledger, logger, metrics, resend };
  return { deps, sqsMock: mockClient(sqs), logger, metrics, protection, ledgerStore };
}

let n = 0;
/** An SQS message as ReceiveMessage returns it. */
export function message(body: string | Record<string, unknown>, receiveCount = 1) {
  n += 1;
  return {
    MessageId: `m${n}`,
    ReceiptHandle: `rh${n}`,
    Body: typeof body === "string" ? body : JSON.stringify(body),
    Attributes: { ApproximateReceiveCount: String(receiveCount) },
  };
}

export function job(type: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  n += 1;
  return { job_id: `job-${n}`, type, payload: { n }, ...extra };
}

/** Real time, for the integration tests against moto; unit tests use helpers/fake-time. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` until true or the deadline; every wait in these tests is bounded. */
export async function waitFor(check: () => boolean, timeoutMs = 5000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}
