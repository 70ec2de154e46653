import { isDeepStrictEqual } from "node:util";
import { ECSClient } from "@aws-sdk/client-ecs";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import {
  BatchGetCommand,
  type BatchGetCommandInput,
  DeleteCommand,
  type DeleteCommandInput,
  DynamoDBDocumentClient,
  UpdateCommand,
  type UpdateCommandInput,
} from "@aws-sdk/lib-dynamodb";
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
    spotFallback: "on-demand",
    stateTable: "retraining-state",
    maxConcurrentTasks: 5,
    environment: "dev",
    quarantineQueueUrl: QUARANTINE_URL,
    retrainingQueueUrl: RETRAINING_URL,
    deferDelaySeconds: 60,
    intentTable: "retraining-intent",
    intentRetentionSeconds: 17 * 86_400,
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

/** A ConditionalCheckFailedException as the SDK throws it, with the item DynamoDB returns (ALL_OLD) in its wire form. */
export function conditionFailed(old?: Record<string, string | number>): Error {
  const item = old && Object.fromEntries(Object.entries(old).map(([k, v]) => [k, typeof v === "number" ? { N: String(v) } : { S: v }]));
  return Object.assign(new Error("The conditional request failed"), { name: "ConditionalCheckFailedException", ...(item ? { Item: item } : {}) });
}

type Item = Record<string, unknown>;
type Values = Record<string, unknown>;

/**
 * The expressions FakeIntentTable evaluates, per write. A write whose expressions differ is one the
 * fake does not model, so it is refused rather than evaluated as if it were the known one.
 */
const INTENT_WRITES = {
  claim: {
    UpdateExpression:
      "SET #status = :in_progress, #attempt = :me, claimed_at = :now, in_progress_until = :until, first_claimed_at = if_not_exists(first_claimed_at, :now), model_name = :model, job_id = :job, #trigger = :trigger, expires_at = :ttl",
    ConditionExpression: "attribute_not_exists(#key) OR (#status = :in_progress AND in_progress_until < :now AND first_claimed_at > :window_start)",
    ExpressionAttributeNames: { "#key": "origin_message_id", "#status": "status", "#attempt": "attempt", "#trigger": "trigger" },
  },
  complete: {
    UpdateExpression: "SET #status = :launched, task_arn = :task_arn, launched_at = :now, expires_at = :ttl REMOVE in_progress_until",
    ConditionExpression: "#attempt = :me",
    ExpressionAttributeNames: { "#status": "status", "#attempt": "attempt" },
  },
  expire: {
    UpdateExpression: "SET in_progress_until = :zero",
    ConditionExpression: "#attempt = :me AND #status = :in_progress",
    ExpressionAttributeNames: { "#attempt": "attempt", "#status": "status" },
  },
  fallback: {
    UpdateExpression: "SET fallback = :fallback",
    ConditionExpression: "#attempt = :me AND #status = :in_progress",
    ExpressionAttributeNames: { "#attempt": "attempt", "#status": "status" },
  },
  delete: {
    UpdateExpression: undefined,
    ConditionExpression: "#attempt = :me AND #status = :in_progress",
    ExpressionAttributeNames: { "#attempt": "attempt", "#status": "status" },
  },
} as const;

function expectWrite(write: keyof typeof INTENT_WRITES, input: UpdateCommandInput | DeleteCommandInput): void {
  const want = INTENT_WRITES[write];
  const got = {
    UpdateExpression: "UpdateExpression" in input ? input.UpdateExpression : undefined,
    ConditionExpression: input.ConditionExpression,
    ExpressionAttributeNames: input.ExpressionAttributeNames,
  };
  if (!isDeepStrictEqual(got, { ...want })) throw new Error(`FakeIntentTable: the ${write} write is not the one modelled: ${JSON.stringify(got)}`);
}

/**
 * The intent table in memory, behind aws-sdk-client-mock: the claim, completion and release
 * writes of functions/retraining/intent.ts, evaluated as their condition expressions say, and
 * BatchGetItem. It lets a test play several invocations against one table (redeliveries,
 * concurrent duplicates, a redrive days later) without moto. Each write is recognised by the
 * attribute values it binds; anything else is refused loudly, so a changed write fails its test
 * here rather than passing against a stale model.
 */
export class FakeIntentTable {
  readonly items = new Map<string, Item>();
  /** Injected faults, by write: `lost` applies the write, then fails as the SDK's retry would (its condition against our own item). */
  private readonly faults = new Map<"claim" | "complete", { lost: true } | { error: Error }>();

  constructor(readonly name = "retraining-intent") {}

  /** The next `write` applies and its response is lost: the SDK's retry then fails its condition against the item it wrote. */
  loseNextResponse(write: "claim" | "complete"): void {
    this.faults.set(write, { lost: true });
  }

  /** The next `write` fails with `error` and applies nothing. */
  failNext(write: "claim" | "complete", error: Error): void {
    this.faults.set(write, { error });
  }

  private fault(write: "claim" | "complete"): { lost: true } | { error: Error } | undefined {
    const f = this.faults.get(write);
    this.faults.delete(write);
    return f;
  }

  /** Routes the mock's intent-table commands here; other tables keep the mock's own answers. */
  install(t: ReturnType<typeof mockedLauncherDeps>): void {
    t.dbMock.on(UpdateCommand, { TableName: this.name }).callsFake((input: UpdateCommandInput) => this.update(input));
    t.dbMock.on(DeleteCommand, { TableName: this.name }).callsFake((input: DeleteCommandInput) => this.delete(input));
    t.dbMock.on(BatchGetCommand).callsFake((input: BatchGetCommandInput) => {
      const keys = (input.RequestItems?.[this.name]?.Keys ?? []) as Item[];
      return { Responses: { [this.name]: keys.flatMap((k) => this.items.get(String(k.origin_message_id)) ?? []) } };
    });
  }

  private update(input: UpdateCommandInput) {
    const v = (input.ExpressionAttributeValues ?? {}) as Values;
    const key = String(input.Key?.origin_message_id);
    const old = this.items.get(key);
    const fail = () => {
      throw conditionFailed(old as Record<string, string | number> | undefined);
    };
    if (v[":in_progress"] !== undefined && v[":me"] !== undefined && v[":until"] !== undefined) {
      // claimIntent: attribute_not_exists OR (in_progress AND in_progress_until < now AND first_claimed_at > window_start)
      expectWrite("claim", input);
      const fault = this.fault("claim");
      if (fault && "error" in fault) throw fault.error;
      const now = Number(v[":now"]);
      const ok =
        old === undefined || (old.status === "in_progress" && Number(old.in_progress_until) < now && Number(old.first_claimed_at) > Number(v[":window_start"]));
      if (!ok) fail();
      const next: Item = {
        ...old,
        origin_message_id: key,
        status: "in_progress",
        attempt: v[":me"],
        claimed_at: now,
        in_progress_until: v[":until"],
        first_claimed_at: old?.first_claimed_at ?? now,
        model_name: v[":model"],
        job_id: v[":job"],
        trigger: v[":trigger"],
        expires_at: v[":ttl"],
      };
      this.items.set(key, next);
      if (fault) throw conditionFailed(next as Record<string, string | number>);
      // ALL_OLD: the whole item the claim replaced.
      return { Attributes: old };
    }
    if (v[":launched"] !== undefined) {
      // completeIntent: attempt = :me
      expectWrite("complete", input);
      const fault = this.fault("complete");
      if (fault && "error" in fault) throw fault.error;
      if (old?.attempt !== v[":me"]) fail();
      const { in_progress_until: _gone, ...rest } = old as Item;
      this.items.set(key, { ...rest, status: "launched", task_arn: v[":task_arn"], launched_at: v[":now"], expires_at: v[":ttl"] });
      return {};
    }
    if (v[":fallback"] !== undefined) {
      // markFallback: attempt = :me AND status = in_progress
      expectWrite("fallback", input);
      if (old?.attempt !== v[":me"] || old?.status !== "in_progress") fail();
      this.items.set(key, { ...(old as Item), fallback: v[":fallback"] });
      return {};
    }
    if (v[":zero"] !== undefined) {
      // releaseIntent (not definite): attempt = :me AND status = in_progress
      expectWrite("expire", input);
      if (old?.attempt !== v[":me"] || old?.status !== "in_progress") fail();
      this.items.set(key, { ...(old as Item), in_progress_until: 0 });
      return {};
    }
    throw new Error(`FakeIntentTable: unrecognised UpdateItem ${input.UpdateExpression}`);
  }

  private delete(input: DeleteCommandInput) {
    expectWrite("delete", input);
    const v = (input.ExpressionAttributeValues ?? {}) as Values;
    const key = String(input.Key?.origin_message_id);
    const old = this.items.get(key);
    if (old?.attempt !== v[":me"] || old?.status !== "in_progress") throw conditionFailed(old as Record<string, string | number> | undefined);
    this.items.delete(key);
    return {};
  }
}
