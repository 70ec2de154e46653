import {
  type AttributeValue,
  DeleteItemCommand,
  type DeleteItemCommandInput,
  DynamoDBClient,
  DynamoDBServiceException,
  PutItemCommand,
  type PutItemCommandInput,
  BatchGetItemCommand,
  type BatchGetItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import {
  DescribeInstancesCommand,
  type DescribeInstancesCommandInput,
  EC2Client,
  EC2ServiceException,
  RunInstancesCommand,
  type RunInstancesCommandInput,
  StartInstancesCommand,
  type StartInstancesCommandInput,
} from "@aws-sdk/client-ec2";
import {
  DeleteMessageCommand,
  type DeleteMessageCommandInput,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchCommandInput,
  SendMessageCommand,
  type SendMessageCommandInput,
  SQSClient,
  SQSServiceException,
} from "@aws-sdk/client-sqs";
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
  constructor(
    public now = Date.parse("2026-01-01T00:00:00Z"),
    public stepPerReceiveMs = 0,
  ) {}
  readonly read = (): number => this.now;
}

function sqsError(name: string): SQSServiceException {
  return new SQSServiceException({ name, message: name, $fault: "client", $metadata: { httpStatusCode: 400 } });
}

/**
 * An in-memory SQS queue behind aws-sdk-client-mock: FIFO-ish receive of one visible message
 * (received messages stay invisible: no visibility timeout is modelled), delete by receipt handle
 * (an unknown handle or another queue's URL is rejected, as SQS does), send (recording DelaySeconds;
 * delayed messages become visible at once, as the next cycle would otherwise just wait).
 */
export class FakePoolQueue {
  readonly sqs = new SQSClient(clientOptions);
  readonly mock = mockClient(this.sqs);
  readonly sent: SendMessageCommandInput[] = [];
  /** Receipt handles of received messages not deleted yet. */
  readonly inFlight = new Set<string>();
  private messages: { id: string; body: string }[] = [];
  private seq = 0;
  /** Handles already used to delete a message. */
  private readonly deleted = new Set<string>();
  /** The next deletes apply and lose their answer. */
  deleteAnswersLost = 0;

  constructor(
    clock?: FakeClock,
    readonly queueUrl = QUEUE_URL,
  ) {
    this.mock.on(ReceiveMessageCommand).callsFake(() => {
      if (clock) clock.now += clock.stepPerReceiveMs;
      const m = this.messages.shift();
      if (!m) return {};
      this.inFlight.add(`rh-${m.id}`);
      return { Messages: [{ MessageId: m.id, ReceiptHandle: `rh-${m.id}`, Body: m.body }] };
    });
    this.mock.on(DeleteMessageCommand).callsFake((input: DeleteMessageCommandInput) => {
      if (input.QueueUrl !== this.queueUrl) throw sqsError("AWS.SimpleQueueService.NonExistentQueue");
      // As SQS: a handle already used to delete deletes again without error; one never handed out is invalid.
      if (input.ReceiptHandle && this.deleted.has(input.ReceiptHandle)) return {};
      if (!input.ReceiptHandle || !this.inFlight.delete(input.ReceiptHandle)) throw sqsError("ReceiptHandleIsInvalid");
      this.deleted.add(input.ReceiptHandle);
      if (this.deleteAnswersLost > 0) {
        this.deleteAnswersLost -= 1;
        // Applied, and its answer never came back (what the SDK reports once its retries are spent).
        throw Object.assign(new Error("read ECONNRESET"), { name: "TimeoutError" });
      }
      return {};
    });
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

export function ec2Error(name: string): EC2ServiceException {
  return new EC2ServiceException({ name, message: name, $fault: "client", $metadata: { httpStatusCode: 400 } });
}

/** EC2 behind aws-sdk-client-mock: describe by id or by tag/state filters (an unknown filter is rejected, as EC2 does), start, run (new ids). */
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
        const tagKey = /^tag:(.+)$/.exec(f.Name ?? "")?.[1];
        if (f.Name === "instance-state-name") found = found.filter((i) => f.Values?.includes(i.state));
        else if (tagKey !== undefined) found = found.filter((i) => i.tags?.[tagKey] !== undefined && f.Values?.includes(i.tags[tagKey]));
        // EC2 rejects a filter it does not know instead of ignoring it.
        else throw ec2Error("InvalidParameterValue");
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
      // EC2 leaves the tag set out of an untagged instance's description.
      ...(i.tags ? { Tags: Object.entries(i.tags).map(([Key, Value]) => ({ Key, Value })) } : {}),
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

function dynamoError(name: string, message: string): DynamoDBServiceException {
  return new DynamoDBServiceException({ name, message, $fault: "client", $metadata: { httpStatusCode: 400 } });
}

const invalid = (message: string) => dynamoError("ValidationException", message);

interface ExpressionContext {
  names: Record<string, string>;
  values: Record<string, AttributeValue>;
  usedNames: Set<string>;
  usedValues: Set<string>;
}

function expressionContext(names: Record<string, string> | undefined, values: Record<string, AttributeValue> | undefined): ExpressionContext {
  return { names: names ?? {}, values: values ?? {}, usedNames: new Set(), usedValues: new Set() };
}

function resolveName(ctx: ExpressionContext, token: string): string {
  if (!token.startsWith("#")) return token;
  const name = ctx.names[token];
  if (name === undefined) throw invalid(`An expression attribute name used in the document path is not defined; attribute name: ${token}`);
  ctx.usedNames.add(token);
  return name;
}

function resolveValue(ctx: ExpressionContext, token: string): AttributeValue {
  const value = ctx.values[token];
  if (value === undefined) throw invalid(`An expression attribute value used in expression is not defined; attribute value: ${token}`);
  ctx.usedValues.add(token);
  return value;
}

/** DynamoDB rejects names or values that no expression of the request uses. */
function rejectUnused(ctx: ExpressionContext): void {
  const unusedNames = Object.keys(ctx.names).filter((n) => !ctx.usedNames.has(n));
  const unusedValues = Object.keys(ctx.values).filter((v) => !ctx.usedValues.has(v));
  if (unusedNames.length > 0) throw invalid(`Value provided in ExpressionAttributeNames unused in expressions: keys: {${unusedNames.join(", ")}}`);
  if (unusedValues.length > 0) throw invalid(`Value provided in ExpressionAttributeValues unused in expressions: keys: {${unusedValues.join(", ")}}`);
}

function compare(left: AttributeValue | undefined, op: string, right: AttributeValue): boolean {
  if (left === undefined) return false;
  const [a, b] = left.N !== undefined && right.N !== undefined ? [Number(left.N), Number(right.N)] : [left.S, right.S];
  if (a === undefined || b === undefined) return false;
  switch (op) {
    case "=":
      return a === b;
    case "<>":
      return a !== b;
    case "<":
      return a < b;
    case "<=":
      return a <= b;
    case ">":
      return a > b;
    case ">=":
      return a >= b;
    default:
      throw invalid(`fake: unsupported comparator ${op}`);
  }
}

/**
 * Evaluates the condition grammar the pool's writes use (`attribute_exists`/`attribute_not_exists`
 * and comparisons, joined by AND/OR) against the stored item, resolving every `#name` and `:value`
 * as DynamoDB does; anything else is rejected, so a changed condition cannot pass unnoticed.
 */
function conditionHolds(ctx: ExpressionContext, expression: string, item: Record<string, AttributeValue> | undefined): boolean {
  if (expression.trim() === "") throw invalid("Invalid ConditionExpression: The expression can not be empty;");
  // Every atom is resolved before any is evaluated: DynamoDB validates the whole expression.
  const disjuncts = expression.split(/\s+OR\s+/).map((conjunction) =>
    conjunction.split(/\s+AND\s+/).map((atom): (() => boolean) => {
      const fn = /^\s*(attribute_exists|attribute_not_exists)\((#?\w+)\)\s*$/.exec(atom);
      if (fn) {
        const name = resolveName(ctx, fn[2]!);
        return () => (item?.[name] !== undefined) === (fn[1] === "attribute_exists");
      }
      const cmp = /^\s*(#?\w+)\s*(=|<>|<=|>=|<|>)\s*(:\w+)\s*$/.exec(atom);
      if (!cmp) throw invalid(`fake: unsupported condition ${atom}`);
      const name = resolveName(ctx, cmp[1]!);
      const value = resolveValue(ctx, cmp[3]!);
      return () => compare(item?.[name], cmp[2]!, value);
    }),
  );
  return disjuncts.some((atoms) => atoms.every((holds) => holds()));
}

/**
 * The claim table behind aws-sdk-client-mock: it evaluates the ConditionExpression each write
 * sends (with its names and values) against the stored item, and returns the old item on a failed
 * condition when ALL_OLD is asked for, as DynamoDB does. It validates what DynamoDB validates: the
 * table name, a non-empty `instance_id` key, unused or undefined expression names/values, and 1–100
 * distinct keys per BatchGetItem, whose ProjectionExpression it applies.
 * `loseResponses(command, n)` makes the next n writes of that command apply and then fail as the
 * SDK's retry would see them after a lost response: the condition is checked again, against the
 * item the first attempt wrote.
 */
export class FakeClaimTable {
  readonly dynamodb = new DynamoDBClient(clientOptions);
  readonly mock = mockClient(this.dynamodb);
  readonly items = new Map<string, LockItem>();
  private readonly lost = { PutItemCommand: 0, DeleteItemCommand: 0 };

  constructor(readonly tableName = TABLE) {
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
    this.mock.on(BatchGetItemCommand).callsFake((input: BatchGetItemCommandInput) => this.batchGet(input));
  }

  loseResponses(command: "PutItemCommand" | "DeleteItemCommand", times = 1): void {
    this.lost[command] += times;
  }

  private checkTable(table: string | undefined): void {
    if (table !== this.tableName) throw dynamoError("ResourceNotFoundException", `Requested resource not found: table ${table ?? ""}`);
  }

  /** The `instance_id` of a key or item; DynamoDB rejects a missing or empty key attribute. */
  private keyOf(attributes: Record<string, AttributeValue> | undefined): string {
    const key = attributes?.instance_id?.S;
    if (key === undefined || key === "")
      throw invalid(
        "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: instance_id",
      );
    return key;
  }

  private current(key: string): Record<string, AttributeValue> | undefined {
    const existing = this.items.get(key);
    return existing && lockAttributes(key, existing);
  }

  private checkCondition(
    input: Pick<PutItemCommandInput, "ConditionExpression" | "ExpressionAttributeNames" | "ExpressionAttributeValues" | "ReturnValuesOnConditionCheckFailure">,
    key: string,
  ): void {
    const ctx = expressionContext(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
    const old = this.current(key);
    const holds = input.ConditionExpression === undefined ? true : conditionHolds(ctx, input.ConditionExpression, old);
    rejectUnused(ctx);
    if (!holds) throw conditionFailed(input.ReturnValuesOnConditionCheckFailure === "ALL_OLD" ? old : undefined);
  }

  private put(input: PutItemCommandInput): void {
    this.checkTable(input.TableName);
    const key = this.keyOf(input.Item);
    this.checkCondition(input, key);
    this.items.set(key, { owner: input.Item?.owner?.S ?? "", expiresAt: Number(input.Item?.expires_at?.N) });
  }

  private delete(input: DeleteItemCommandInput): void {
    this.checkTable(input.TableName);
    const key = this.keyOf(input.Key);
    if (Object.keys(input.Key ?? {}).length !== 1) throw invalid("The provided key element does not match the schema");
    this.checkCondition(input, key);
    this.items.delete(key);
  }

  private batchGet(input: BatchGetItemCommandInput) {
    const requests = Object.entries(input.RequestItems ?? {});
    const responses: Record<string, Record<string, AttributeValue>[]> = {};
    for (const [table, req] of requests) {
      this.checkTable(table);
      const keys = (req.Keys ?? []).map((k) => this.keyOf(k));
      if (keys.length === 0 || keys.length > 100)
        throw invalid(`Too many items requested for the BatchGetItem call (${keys.length}); 1 to 100 keys are allowed`);
      if (new Set(keys).size !== keys.length) throw invalid("Provided list of item keys contains duplicates");
      const ctx = expressionContext(req.ExpressionAttributeNames, undefined);
      const projection = req.ProjectionExpression?.split(",").map((path) => {
        if (path.trim() === "") throw invalid("Invalid ProjectionExpression: The expression can not be empty;");
        return resolveName(ctx, path.trim());
      });
      rejectUnused(ctx);
      responses[table] = keys.flatMap((k) => {
        const item = this.current(k);
        if (!item) return [];
        return [projection ? Object.fromEntries(Object.entries(item).filter(([name]) => projection.includes(name))) : item];
      });
    }
    return { Responses: responses, UnprocessedKeys: {} };
  }

  calls(command: string): number {
    return this.mock.calls().filter((c) => c.args[0].constructor.name === command).length;
  }
}
