import { ECSClient } from "@aws-sdk/client-ecs";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import type { LauncherConfig } from "../../../functions/retraining/config";
import type { LauncherDeps } from "../../../functions/retraining/handler";
import { RecordingLogger, RecordingMetrics } from "./telemetry";

export const QUARANTINE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/retraining-dlq";
export const RETRAINING_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/retraining";

/** RecordingMetrics plus the Environment dimension the launcher adds. */
export class RecordingLauncherMetrics extends RecordingMetrics {
  readonly dimensions: Record<string, string> = {};
  addDimension(name: string, value: string): this {
    this.dimensions[name] = value;
    return this;
  }
}

export function launcherConfig(overrides: Partial<LauncherConfig> = {}): LauncherConfig {
  return {
    cluster: "platform-cluster",
    taskDefinition: "tradai-strategy-generic-dev",
    containerName: "strategy",
    subnets: ["subnet-a", "subnet-b"],
    securityGroups: ["sg-1"],
    useSpot: false,
    stateTable: "retraining-state",
    maxConcurrentTasks: 5,
    environment: "dev",
    quarantineQueueUrl: QUARANTINE_URL,
    retrainingQueueUrl: RETRAINING_URL,
    deferDelaySeconds: 60,
    ...overrides,
  };
}

/** Deps with aws-sdk-client-mock on injected client instances. */
export function mockedLauncherDeps(config: Partial<LauncherConfig> = {}) {
  const ecs = new ECSClient({ region: "us-east-1" });
  const db = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1" }));
  const sqs = new SQSClient({ region: "us-east-1" });
  const logger = new RecordingLogger();
  const metrics = new RecordingLauncherMetrics();
  // Lease waits return at once; the pauses asked for are kept for assertions.
  const sleeps: number[] = [];
  const deps: LauncherDeps = {
    ecs,
    db,
    sqs,
    config: launcherConfig(config),
    logger,
    metrics,
    now: () => new Date("2024-01-01T12:00:00.000Z"),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  };
  return { deps, logger, metrics, sleeps, ecsMock: mockClient(ecs), dbMock: mockClient(db), sqsMock: mockClient(sqs) };
}

export const retrainingBody = (o: Record<string, unknown> = {}) => ({ model_name: "PascalStrategy", trigger: "scheduled", ...o });
