import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { EC2Client } from "@aws-sdk/client-ec2";
import type { SSMClient } from "@aws-sdk/client-ssm";
import type { TimeBudget } from "../budget";
import type { HousekeepingConfig } from "../config";
import type { FleetTelemetry } from "../telemetry";

export interface TaskDeps extends FleetTelemetry {
  ec2: EC2Client;
  ssm: SSMClient;
  dynamodb: DynamoDBClient;
  config: HousekeepingConfig;
  /** The clock: injected so tests can move time instead of waiting. */
  now: () => Date;
}

/** What a run did; `complete: false` means the time budget ran out and the rest waits for the next run. */
export interface TaskResult {
  complete: boolean;
  [count: string]: number | boolean;
}

export type Task<P> = (deps: TaskDeps, params: P, budget: TimeBudget) => Promise<TaskResult>;
