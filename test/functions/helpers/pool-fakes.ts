import { type AttributeValue, DeleteItemCommand, type DeleteItemCommandInput, DynamoDBClient, PutItemCommand, type PutItemCommandInput, BatchGetItemCommand, type BatchGetItemCommandInput } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, type DescribeInstancesCommandInput, EC2Client, EC2ServiceException, RunInstancesCommand, type RunInstancesCommandInput, StartInstancesCommand, type StartInstancesCommandInput } from "@aws-sdk/client-ec2";
import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageBatchCommand, type SendMessageBatchCommandInput, SendMessageCommand, type SendMessageCommandInput, SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import type { Advert, ResourceClassSpec } from "../../../functions/pool/advert";
import { conditionFailed } from "./dynamodb-errors";
import { RecordingLogger, RecordingMetrics } from "./telemetry";

export const QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/pool-gpu-small";
export const TABLE = "pool-claims";
export const POOL_TAG = "encache-warm-pool-test";

export const GPU_SMALL: ResourceClassSpec = { name: "gpu-small", instanceTypes: ["g5.xlarge", "g6.xlarge"], cpu: 4, memoryMib: 16384, usageClass: "on-demand" };

let n = 0;
/** A distinct, valid instance id. */
export function instanceId(): string {
  n += 1;
  return `i-${n.toString(16).padStart(17, "0")}`;
}

export function advert(overrides: Partial<Advert> = {}): Advert {
  return {
    instance_id: instanceId(),
    resource_class: "gpu-small",
    instance_type: "g5.xlarge",
    usage_class: "on-demand",
    cpu: 4,
    memory_mib: 16384,
    advertised_at: "2026-01-01T00:00:00.000Z",
    ...overrides,
  };
}

const clientOptions = { region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } };

/** A controllable clock: epoch ms, advanced by hand or by every SQS receive. */
export class FakeClock {
  constructor(public now = Date.parse("2026-01-01T00:00:00Z"), public stepPerReceiveMs = 0) {}
  readonly read = (): number => this.now;
}

/**
 * An in-memory SQS queue behind aws-sdk-client-mock: FIFO-ish receive of one visible message,
 * delete by receipt handle, send (recording DelaySeconds; delayed messages become visible at
 * once, as the next cycle would otherwise just wait).
 */
export class FakePoolQueue {
  readonly sqs = new SQSClient(clientOptions);
  readonly mock = mockClient(this.sqs);
  readonly sent: SendMessageCommandInput[] = [];
  private messages: { id: string; body: string }[] = [];
  private seq = 0;

  constructor(clock?: FakeClock) {
    this.mock.on(ReceiveMessageCommand).callsFake(() => {
      if (clock) clock.now += clock.stepPerReceiveMs;
      const m = this.messages.shift();
      return m ? { Messages: [{ MessageId: m.id, ReceiptHandle: `rh-${m.id}`, Body: m.body }] } : {};
    });
    this.mock.on(DeleteMessageCommand).resolves({});
    this.mock.on(SendMessageCommand).callsFake((input: SendMessageCommandInput) => {
      this.sent.push(input);
      this.push(input.MessageBody ?? "");
      return { MessageId: `m${++this.seq}` };
    });
    this.mock.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => {
      const entries = input.Entries ?? [];
      for (const e of entries) {
        this.sent.push({ QueueUrl: input.QueueUrl, MessageBody: e.MessageBody, DelaySeconds: e.DelaySeconds });
        this.push(e.MessageBody ?? "");
      }
      return { Successful: entries.map((e) => ({ Id: e.Id, MessageId: `m${++this.seq}`, MD5OfMessageBody: "" })), Failed: [] };
    });
  }

  push(body: string | object): void {
    this.messages.push({ id: `m${++this.seq}`, body: typeof body === "string" ? body : JSON.stringify(body) });
  }

  depth(): number {
    return this.messages.length;
  }

  bodies(): string[] {
    return this.messages.map((m) => m.body);
  }

  calls(command: string): number {
    return this.mock.calls().filter((c) => c.args[0].constructor.name === command).length;
  }
}

export function telemetry() {
  return { logger: new RecordingLogger(), metrics: new RecordingMetrics() };
}

export interface FakeEc2Instance {
  id: string;
  state: string;
  type?: string;
  tags?: Record<string, string>;
}

export function poolTags(cls = "gpu-small"): Record<string, string> {
  return { "encache:pool": POOL_TAG, "encache:pool-class": cls };
}

function ec2Error(name: string): EC2ServiceException {
  return new EC2ServiceException({ name, message: name, $fault: "client", $metadata: { httpStatusCode: 400 } });
}

/** EC2 behind aws-sdk-client-mock: describe by id or by tag/state filters, start, run (new ids). */
export class FakeEc2 {
  readonly ec2 = new EC2Client(clientOptions);
  readonly mock = mockClient(this.ec2);
  readonly started: string[] = [];
  readonly runs: RunInstancesCommandInput[] = [];

  constructor(readonly instances: FakeEc2Instance[] = []) {
    this.mock.on(DescribeInstancesCommand).callsFake((input: DescribeInstancesCommandInput) => {
      let found = this.instances;
      if (input.InstanceIds) {
        found = found.filter((i) => input.InstanceIds?.includes(i.id));
        if (found.length === 0) throw ec2Error("InvalidInstanceID.NotFound");
      }
      for (const f of input.Filters ?? []) {
        if (f.Name === "instance-state-name") found = found.filter((i) => f.Values?.includes(i.state));
        else if (f.Name?.startsWith("tag:")) found = found.filter((i) => f.Values?.includes(i.tags?.[f.Name!.slice(4)] ?? ""));
      }
      return { Reservations: found.length ? [{ Instances: found.map((i) => this.toEc2(i)) }] : [] };
    });
    this.mock.on(StartInstancesCommand).callsFake((input: StartInstancesCommandInput) => {
      for (const id of input.InstanceIds ?? []) {
        this.started.push(id);
        const i = this.instances.find((x) => x.id === id);
        if (i) i.state = "pending";
      }
      return {};
    });
    this.mock.on(RunInstancesCommand).callsFake((input: RunInstancesCommandInput) => {
      this.runs.push(input);
      const tags = Object.fromEntries((input.TagSpecifications?.[0]?.Tags ?? []).map((t) => [t.Key ?? "", t.Value ?? ""]));
      const created = Array.from({ length: input.MaxCount ?? 1 }, () => ({ id: instanceId(), state: "pending", type: "g5.xlarge", tags }));
      this.instances.push(...created);
      return { Instances: created.map((i) => this.toEc2(i)) };
    });
  }

  private toEc2(i: FakeEc2Instance) {
    return {
      InstanceId: i.id,
      InstanceType: i.type ?? "g5.xlarge",
      State: { Name: i.state },
      Tags: Object.entries(i.tags ?? {}).map(([Key, Value]) => ({ Key, Value })),
    } as const;
  }

  calls(command: string): number {
    return this.mock.calls().filter((c) => c.args[0].constructor.name === command).length;
  }
}

interface LockItem {
  owner: string;
  expiresAt: number;
}

function lockAttributes(key: string, item: LockItem): Record<string, AttributeValue> {
  return { instance_id: { S: key }, owner: { S: item.owner }, expires_at: { N: String(item.expiresAt) } };
}

/**
 * The claim table behind aws-sdk-client-mock, evaluating the lock conditions the code sends and
 * returning the old item on a failed condition when ALL_OLD is asked for, as DynamoDB does.
 * `loseResponses(command, n)` makes the next n writes of that command apply and then fail as the
 * SDK's retry would see them after a lost response: the condition is checked again, against the
 * item the first attempt wrote.
 */
export class FakeClaimTable {
  readonly dynamodb = new DynamoDBClient(clientOptions);
  readonly mock = mockClient(this.dynamodb);
  readonly items = new Map<string, LockItem>();
  private readonly lost = { PutItemCommand: 0, DeleteItemCommand: 0 };

  constructor() {
    this.mock.on(PutItemCommand).callsFake((input: PutItemCommandInput) => {
      this.put(input);
      if (this.lost.PutItemCommand > 0) {
        this.lost.PutItemCommand -= 1;
        this.put(input);
      }
      return {};
    });
    this.mock.on(DeleteItemCommand).callsFake((input: DeleteItemCommandInput) => {
      this.delete(input);
      if (this.lost.DeleteItemCommand > 0) {
        this.lost.DeleteItemCommand -= 1;
        this.delete(input);
      }
      return {};
    });
    this.mock.on(BatchGetItemCommand).callsFake((input: BatchGetItemCommandInput) => {
      const [table, req] = Object.entries(input.RequestItems ?? {})[0] ?? [];
      const found = (req?.Keys ?? [])
        .map((k) => k.instance_id?.S ?? "")
        .filter((k) => this.items.has(k))
        .map((k) => ({ instance_id: { S: k }, expires_at: { N: String(this.items.get(k)!.expiresAt) } }));
      return { Responses: { [table ?? TABLE]: found } };
    });
  }

  loseResponses(command: "PutItemCommand" | "DeleteItemCommand", times = 1): void {
    this.lost[command] += times;
  }

  private oldItem(key: string, returnValues: string | undefined): Record<string, AttributeValue> | undefined {
    const existing = this.items.get(key);
    return existing && returnValues === "ALL_OLD" ? lockAttributes(key, existing) : undefined;
  }

  private put(input: PutItemCommandInput): void {
    const key = input.Item?.instance_id?.S ?? "";
    const now = Number(input.ExpressionAttributeValues?.[":now"]?.N);
    const existing = this.items.get(key);
    if (existing && !(existing.expiresAt < now)) throw conditionFailed(this.oldItem(key, input.ReturnValuesOnConditionCheckFailure));
    this.items.set(key, { owner: input.Item?.owner?.S ?? "", expiresAt: Number(input.Item?.expires_at?.N) });
  }

  private delete(input: DeleteItemCommandInput): void {
    const key = input.Key?.instance_id?.S ?? "";
    const existing = this.items.get(key);
    if (!existing || existing.owner !== input.ExpressionAttributeValues?.[":owner"]?.S) throw conditionFailed(this.oldItem(key, input.ReturnValuesOnConditionCheckFailure));
    this.items.delete(key);
  }

  calls(command: string): number {
    return this.mock.calls().filter((c) => c.args[0].constructor.name === command).length;
  }
}
