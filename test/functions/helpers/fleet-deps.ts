import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EC2Client } from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { mockClient } from "aws-sdk-client-mock";
import type { HousekeepingConfig, TerminationConfig } from "../../../functions/fleet/config";
import type { DimensionedMetric, FleetMetrics } from "../../../functions/fleet/telemetry";
import { RecordingLogger } from "./telemetry";

export const TABLE = "fleet-jobs";
export const TERMINATION_DLQ_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/fleet-termination-dlq";
export const HOUSEKEEPING_DLQ_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/fleet-housekeeping-dlq";

export interface EmittedMetric {
  name: string;
  unit: string;
  value: number;
  dimensions: Record<string, string>;
}

/** Records stored metrics and single (dimensioned) metrics alike, with their dimensions. */
export class RecordingFleetMetrics implements FleetMetrics {
  readonly emitted: EmittedMetric[] = [];
  published = 0;

  addMetric(name: string, unit: string, value: number): this {
    this.emitted.push({ name, unit, value, dimensions: {} });
    return this;
  }

  publishStoredMetrics(): this {
    this.published += 1;
    return this;
  }

  singleMetric(): DimensionedMetric {
    const dimensions: Record<string, string> = {};
    return {
      addDimension: (name: string, value: string) => {
        dimensions[name] = value;
      },
      addMetric: (name: string, unit: string, value: number) => {
        this.emitted.push({ name, unit, value, dimensions: { ...dimensions } });
      },
    };
  }

  named(name: string): EmittedMetric[] {
    return this.emitted.filter((m) => m.name === name);
  }
}

const clientOptions = { region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } };

/** Fresh clients with aws-sdk-client-mock stubs on those instances only, plus recorders. */
export function mockedClients() {
  const dynamodb = new DynamoDBClient(clientOptions);
  const ssm = new SSMClient(clientOptions);
  const sqs = new SQSClient(clientOptions);
  const ec2 = new EC2Client(clientOptions);
  return {
    clients: { dynamodb, ssm, sqs, ec2 },
    dynamodbMock: mockClient(dynamodb),
    ssmMock: mockClient(ssm),
    sqsMock: mockClient(sqs),
    ec2Mock: mockClient(ec2),
    logger: new RecordingLogger(),
    metrics: new RecordingFleetMetrics(),
  };
}

export function terminationConfig(overrides: Partial<TerminationConfig> = {}): TerminationConfig {
  return {
    jobsTable: TABLE,
    retentionDays: 7,
    queueUrl: "https://sqs.us-east-1.amazonaws.com/123456789012/fleet-termination",
    quarantineQueueUrl: TERMINATION_DLQ_URL,
    runnerParameterPath: "/runs-fleet/dev/runners",
    ...overrides,
  };
}

export function housekeepingConfig(overrides: Partial<HousekeepingConfig> = {}): HousekeepingConfig {
  return {
    jobsTable: TABLE,
    retentionDays: 7,
    queueUrl: "https://sqs.us-east-1.amazonaws.com/123456789012/fleet-housekeeping",
    quarantineQueueUrl: HOUSEKEEPING_DLQ_URL,
    maxRuntimeMinutes: 60,
    ssmMinAgeMinutes: 15,
    pools: [],
    instancePrices: {},
    timeMarginMs: 10_000,
    runnerParameterPath: "/runs-fleet/dev/runners",
    managedTag: { key: "runs-fleet:managed", value: "true" },
    environmentTag: { key: "encache:environment", value: "dev" },
    poolTagKey: "runs-fleet:pool",
    ...overrides,
  };
}

export function terminationMessage(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    instance_id: "i-0123456789abcdef0",
    job_id: "67890",
    status: "success",
    exit_code: 0,
    duration_seconds: 123,
    started_at: "2025-11-25T10:00:00Z",
    completed_at: "2025-11-25T10:02:03Z",
    ...overrides,
  };
}

/** An AWS service exception as the SDK raises it: what matters to the code is `name`. */
export function awsError(name: string, message = name): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** A Lambda context whose remaining time is read from a counter the test controls. */
export function contextWithRemaining(remaining: () => number) {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: "fleet-housekeeping-consumer",
    functionVersion: "$LATEST",
    invokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:fleet-housekeeping-consumer",
    memoryLimitInMB: "256",
    awsRequestId: "req-1",
    logGroupName: "g",
    logStreamName: "s",
    getRemainingTimeInMillis: remaining,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
