/**
 * Fakes of the fleet's AWS dependencies that answer according to what was asked: the jobs table
 * evaluates the Query's index, key condition, filter and projection through the expression
 * attribute names and values (and refuses what DynamoDB refuses), EC2 applies DescribeInstances'
 * filters. A request naming the wrong attribute, index or tag then gets the wrong answer, and a
 * test fails, where a fake with a fixed answer would let it pass.
 */
import {
  type AttributeValue,
  BatchWriteItemCommand,
  type BatchWriteItemCommandInput,
  GetItemCommand,
  type GetItemCommandInput,
  PutItemCommand,
  type PutItemCommandInput,
  QueryCommand,
  type QueryCommandInput,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import {
  DescribeInstancesCommand,
  type DescribeInstancesCommandInput,
  type Instance,
  TerminateInstancesCommand,
  type TerminateInstancesCommandInput,
} from "@aws-sdk/client-ec2";
import type { AwsStub } from "aws-sdk-client-mock";
import { JOBS_TABLE } from "../../../functions/shared/tables";
import { awsError, TABLE } from "./fleet-deps";

/** A job item: the attributes the fleet's queries read. */
export interface JobRow {
  job_id: string;
  status: string;
  instance_id?: string;
  completed_at?: string;
}

/** Each GSI's key attributes, hash first: an item lacking one is not in the (sparse) index. */
const INDEX_KEYS: Readonly<Record<string, readonly string[]>> = {
  [JOBS_TABLE.completedIndex.name]: [JOBS_TABLE.completedIndex.hashKey, JOBS_TABLE.completedIndex.rangeKey],
  [JOBS_TABLE.instanceIndex.name]: [JOBS_TABLE.instanceIndex.hashKey],
  [JOBS_TABLE.activeIndex.name]: [JOBS_TABLE.activeIndex.hashKey, JOBS_TABLE.activeIndex.rangeKey],
};

const validation = (message: string) => awsError("ValidationException", message);

type Names = Record<string, string>;
type Values = Record<string, AttributeValue>;

function nameOf(names: Names, token: string): string {
  const name = names[token];
  if (name === undefined || name === "") throw validation(`An expression attribute name used in the document path is not defined; attribute name: ${token}`);
  return name;
}

function valueOf(values: Values, token: string): string {
  const value = values[token]?.S;
  if (value === undefined) throw validation(`An expression attribute value used in expression is not defined (or not a string); attribute value: ${token}`);
  return value;
}

const COMPARE: Readonly<Record<string, (a: string, b: string) => boolean>> = {
  "=": (a, b) => a === b,
  "<": (a, b) => a < b,
  "<=": (a, b) => a <= b,
  ">": (a, b) => a > b,
  ">=": (a, b) => a >= b,
};

/** The jobs table and its GSIs, in memory, behind a mocked DynamoDB client. */
export class FakeJobsTable {
  readonly rows: JobRow[];
  /** The sweeps' cursor items, by key: GetItem and PutItem answer for these keys only, as the role's LeadingKeys condition allows. */
  readonly cursors = new Map<string, Values>();

  /** `unreadable`: indexes whose Query fails as a throttled read does after the SDK's retries. */
  constructor(
    rows: JobRow[],
    private readonly pageSize = 1000,
    private readonly unreadable: readonly string[] = [],
  ) {
    this.rows = [...rows];
  }

  /** Answers QueryCommand and BatchWriteItemCommand on `mock` (a mocked DynamoDBClient). */
  // The stub's generic parameters are the client's; `any` keeps this helper independent of them.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  install(mock: AwsStub<any, any, any>): this {
    mock.on(QueryCommand).callsFake((input: QueryCommandInput) => this.query(input));
    mock.on(BatchWriteItemCommand).callsFake((input: BatchWriteItemCommandInput) => this.batchWrite(input));
    mock.on(GetItemCommand).callsFake((input: GetItemCommandInput) => {
      const key = this.cursorKeyOf(input.TableName, input.Key);
      const item = this.cursors.get(key);
      return item === undefined ? {} : { Item: item };
    });
    mock.on(PutItemCommand).callsFake((input: PutItemCommandInput) => {
      const key = this.cursorKeyOf(input.TableName, input.Item);
      this.cursors.set(key, { ...input.Item });
      return {};
    });
    return this;
  }

  /** The cursor key a GetItem or PutItem names; any other key is refused as the housekeeping role's grant refuses it. */
  private cursorKeyOf(table: string | undefined, key: Values | undefined): string {
    if (table !== TABLE) throw awsError("ResourceNotFoundException", `Requested resource not found: ${table}`);
    const id = key?.[JOBS_TABLE.hashKey]?.S;
    if (id === undefined) throw validation("The provided key element does not match the schema");
    if (!id.startsWith(JOBS_TABLE.sweepCursorKeyPrefix)) throw awsError("AccessDeniedException", `not authorized to access the item ${id}`);
    return id;
  }

  query(input: QueryCommandInput): { Items?: Values[]; Count: number; LastEvaluatedKey?: Values } {
    if (input.TableName !== TABLE) throw awsError("ResourceNotFoundException", `Requested resource not found: ${input.TableName}`);
    const keys = input.IndexName === undefined ? undefined : INDEX_KEYS[input.IndexName];
    if (keys === undefined) throw validation(`The table does not have the specified index: ${input.IndexName}`);
    if (this.unreadable.includes(input.IndexName!)) throw awsError("ProvisionedThroughputExceededException", "Rate exceeded");
    const names: Names = input.ExpressionAttributeNames ?? {};
    const values: Values = input.ExpressionAttributeValues ?? {};
    this.refuseUnused(input, names, values);

    const conditions = (input.KeyConditionExpression ?? "").split(" AND ").map((part) => {
      const m = /^(#\w+) (=|<|<=|>|>=) (:\w+)$/.exec(part.trim());
      if (!m) throw validation(`Invalid KeyConditionExpression: ${input.KeyConditionExpression}`);
      return { attribute: nameOf(names, m[1]!), compare: COMPARE[m[2]!]!, value: valueOf(values, m[3]!), op: m[2] };
    });
    if (conditions[0]!.attribute !== keys[0] || conditions[0]!.op !== "=") throw validation(`Query condition missed key schema element: ${keys[0]}`);
    if (conditions[1] && conditions[1].attribute !== keys[1]) throw validation(`Query key condition not supported: ${conditions[1].attribute}`);
    const filter = input.FilterExpression === undefined ? undefined : this.inFilter(input.FilterExpression, names, values);

    const inIndex = this.rows.filter((row) => keys.every((k) => row[k as keyof JobRow] !== undefined));
    const matching = inIndex
      .filter((row) => conditions.every((c) => c.compare(String(row[c.attribute as keyof JobRow]), c.value)))
      .sort((a, b) => String(a[keys[1] as keyof JobRow] ?? a.job_id).localeCompare(String(b[keys[1] as keyof JobRow] ?? b.job_id)));
    const start = Number(input.ExclusiveStartKey?.offset?.N ?? 0);
    const limit = Math.min(input.Limit ?? this.pageSize, this.pageSize);
    const page = matching.slice(start, start + limit);
    const more = start + limit < matching.length ? { LastEvaluatedKey: { offset: { N: String(start + limit) } } } : {};
    // DynamoDB applies the filter to the page read, after the key condition.
    const kept = filter ? page.filter((row) => filter.attribute in row && filter.values.includes(String(row[filter.attribute as keyof JobRow]))) : page;
    if (input.Select === "COUNT") return { Count: kept.length, ...more };
    const projected = input.ProjectionExpression === undefined ? undefined : input.ProjectionExpression.split(",").map((p) => nameOf(names, p.trim()));
    const items = kept.map((row) => {
      const item: Values = {};
      for (const [k, v] of Object.entries(row)) if (v !== undefined && (projected === undefined || projected.includes(k))) item[k] = { S: v as string };
      return item;
    });
    return { Items: items, Count: items.length, ...more };
  }

  batchWrite(input: BatchWriteItemCommandInput): { UnprocessedItems: Record<string, never> } {
    const requests = Object.entries(input.RequestItems ?? {});
    for (const [table, writes] of requests) {
      if (table !== TABLE) throw awsError("ResourceNotFoundException", `Requested resource not found: ${table}`);
      if (writes.length > 25) throw validation("Too many items requested for the BatchWriteItem call");
      for (const write of writes) {
        const key = write.DeleteRequest?.Key;
        const id = key?.[JOBS_TABLE.hashKey]?.S;
        if (key === undefined || id === undefined || Object.keys(key).length !== 1) throw validation("The provided key element does not match the schema");
        const at = this.rows.findIndex((row) => row.job_id === id);
        if (at >= 0) this.rows.splice(at, 1);
      }
    }
    return { UnprocessedItems: {} };
  }

  /** `#a IN (:v0, :v1)`, the only filter the fleet sends. */
  private inFilter(expression: string, names: Names, values: Values): { attribute: string; values: string[] } {
    const m = /^(#\w+) IN \((:\w+(?:, :\w+)*)\)$/.exec(expression);
    if (!m) throw validation(`Invalid FilterExpression: ${expression}`);
    return { attribute: nameOf(names, m[1]!), values: m[2]!.split(", ").map((v) => valueOf(values, v)) };
  }

  /** DynamoDB refuses names and values that no expression uses. */
  private refuseUnused(input: QueryCommandInput, names: Names, values: Values): void {
    const used = [input.KeyConditionExpression, input.FilterExpression, input.ProjectionExpression].filter((e) => e !== undefined).join(" ");
    for (const token of [...Object.keys(names), ...Object.keys(values)]) {
      if (!new RegExp(`${token}\\b`).test(used))
        throw validation(`Value provided in ExpressionAttribute${token.startsWith("#") ? "Names" : "Values"} unused in expressions: keys: {${token}}`);
    }
  }
}

/** The filters DescribeInstances understands here, as EC2 applies them to an instance. */
function matchesFilter(instance: Instance, filter: { Name?: string | undefined; Values?: string[] | undefined }): boolean {
  const name = filter.Name ?? "";
  const values = filter.Values ?? [];
  if (name.startsWith("tag:") && name.length > 4) {
    const key = name.slice(4);
    return (instance.Tags ?? []).some((t) => t.Key === key && t.Value !== undefined && values.includes(t.Value));
  }
  if (name === "instance-state-name") return values.includes(instance.State?.Name ?? "");
  if (name === "instance-id") return values.includes(instance.InstanceId ?? "");
  throw awsError("InvalidParameterValue", `The filter '${name}' is invalid`);
}

/**
 * EC2's DescribeInstances over `instances`: only those matching every filter, one reservation per
 * page. With MaxResults, pages of that many in instance-id order, and a NextToken that names where
 * the next page starts (the last id returned), as opaque to the caller as EC2's and as robust to
 * instances leaving the answer in between. A filter name EC2 does not know fails the call, as
 * EC2's does. `latencyMs`: each answer takes that long (on the timers, fake or real).
 * TerminateInstances moves the named instances to `shutting-down`, as EC2 does.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the stub's client generics, see FakeJobsTable.install
export function ec2Fleet(mock: AwsStub<any, any, any>, instances: Instance[], options: { latencyMs?: number } = {}): void {
  const answer = (input: DescribeInstancesCommandInput) => {
    const filters = input.Filters ?? [];
    const matching = instances.filter((i) => filters.every((f) => matchesFilter(i, f)));
    if (input.MaxResults === undefined) return { Reservations: [{ Instances: matching }] };
    if (input.MaxResults < 5 || input.MaxResults > 1000) throw awsError("InvalidParameterValue", `MaxResults must be 5..1000: ${input.MaxResults}`);
    const sorted = [...matching].sort((a, b) => (a.InstanceId ?? "").localeCompare(b.InstanceId ?? ""));
    const after = input.NextToken === undefined ? undefined : /^after:(i-[0-9a-f]+)$/.exec(input.NextToken)?.[1];
    if (input.NextToken !== undefined && after === undefined) throw awsError("InvalidParameterValue", "Invalid NextToken");
    const rest = after === undefined ? sorted : sorted.filter((i) => (i.InstanceId ?? "") > after);
    const page = rest.slice(0, input.MaxResults);
    const more = rest.length > page.length ? { NextToken: `after:${page[page.length - 1]!.InstanceId}` } : {};
    return { Reservations: [{ Instances: page }], ...more };
  };
  mock.on(DescribeInstancesCommand).callsFake((input: DescribeInstancesCommandInput) => {
    if (options.latencyMs === undefined) return answer(input);
    return new Promise((resolve, reject) =>
      setTimeout(() => {
        try {
          resolve(answer(input));
        } catch (error) {
          reject(error);
        }
      }, options.latencyMs),
    );
  });
  mock.on(TerminateInstancesCommand).callsFake((input: TerminateInstancesCommandInput) => {
    for (const i of instances) if (input.InstanceIds?.includes(i.InstanceId ?? "")) i.State = { Name: "shutting-down", Code: 32 };
    return {};
  });
}

/**
 * The jobs table's items for the termination consumer's UpdateItem: the update expression is
 * applied as DynamoDB applies it (SET `#a = :v` and `#a = if_not_exists(#a, :v)`, through the
 * expression attribute names and values) under the condition (`#a = :v` terms joined by OR, and
 * `attribute_not_exists(#a)`, conjunctions of them by AND). A failed condition raises ConditionalCheckFailedException carrying
 * the old item when ReturnValuesOnConditionCheckFailure is ALL_OLD, as DynamoDB does.
 */
export class FakeJobItems {
  readonly items = new Map<string, Values>();

  constructor(items: Values[] = []) {
    for (const item of items) this.items.set(item[JOBS_TABLE.hashKey]!.S!, item);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the stub's client generics, see FakeJobsTable.install
  install(mock: AwsStub<any, any, any>, conditionFailed: (item?: Values) => Error): this {
    mock.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => this.update(input, conditionFailed));
    return this;
  }

  update(input: UpdateItemCommandInput, conditionFailed: (item?: Values) => Error): Record<string, never> {
    if (input.TableName !== TABLE) throw awsError("ResourceNotFoundException", `Requested resource not found: ${input.TableName}`);
    const keyNames = Object.keys(input.Key ?? {});
    const id = input.Key?.[JOBS_TABLE.hashKey]?.S;
    if (id === undefined || keyNames.length !== 1) throw validation("The provided key element does not match the schema");
    const names: Names = input.ExpressionAttributeNames ?? {};
    const values: Values = input.ExpressionAttributeValues ?? {};
    const used = [input.UpdateExpression, input.ConditionExpression].filter((e) => e !== undefined).join(" ");
    for (const token of [...Object.keys(names), ...Object.keys(values)]) {
      if (!new RegExp(`${token}(?!\\w)`).test(used))
        throw validation(`Value provided in ExpressionAttribute${token.startsWith("#") ? "Names" : "Values"} unused in expressions: keys: {${token}}`);
    }
    const old = this.items.get(id);
    if (input.ConditionExpression !== undefined && !this.holds(input.ConditionExpression, old ?? {}, names, values)) {
      throw conditionFailed(input.ReturnValuesOnConditionCheckFailure === "ALL_OLD" ? old : undefined);
    }
    const item: Values = { ...(old ?? {}), [JOBS_TABLE.hashKey]: { S: id } };
    for (const { attribute, value, ifNotExists } of this.assignments(input.UpdateExpression ?? "", names, values)) {
      if (ifNotExists && item[attribute] !== undefined) continue;
      item[attribute] = value;
    }
    this.items.set(id, item);
    return {};
  }

  /** `SET #a = :v, #b = if_not_exists(#b, :w)`: anything else is a ValidationException. */
  private assignments(expression: string, names: Names, values: Values): Array<{ attribute: string; value: AttributeValue; ifNotExists: boolean }> {
    const m = /^SET (.+)$/.exec(expression);
    if (!m) throw validation(`Invalid UpdateExpression: ${expression}`);
    const out: Array<{ attribute: string; value: AttributeValue; ifNotExists: boolean }> = [];
    const rest = m[1]!.replace(
      /(#\w+) = (?:if_not_exists\((#\w+), (:\w+)\)|(:\w+))(, |$)/g,
      (_all, target: string, self: string | undefined, fallback: string | undefined, plain: string | undefined) => {
        if (self !== undefined && self !== target) throw validation(`if_not_exists must name the attribute it sets: ${expression}`);
        const token = (fallback ?? plain)!;
        const value = values[token];
        if (value === undefined || Object.keys(value).length !== 1)
          throw validation(`An expression attribute value used in expression is not defined; attribute value: ${token}`);
        out.push({ attribute: nameOf(names, target), value, ifNotExists: self !== undefined });
        return "";
      },
    );
    if (rest !== "" || out.length === 0) throw validation(`Invalid UpdateExpression: Syntax error; token: "${rest}"`);
    const attributes = out.map((a) => a.attribute);
    if (new Set(attributes).size !== attributes.length) throw validation("Two document paths overlap with each other");
    return out;
  }

  private holds(expression: string, item: Values, names: Names, values: Values): boolean {
    // Terms joined by OR, each a conjunction (AND) of `#a = :v` and `attribute_not_exists(#a)`.
    return expression.split(" OR ").some((term) =>
      term.split(" AND ").every((part) => {
        const absent = /^attribute_not_exists\((#\w+)\)$/.exec(part);
        if (absent) return item[nameOf(names, absent[1]!)] === undefined;
        const equal = /^(#\w+) = (:\w+)$/.exec(part);
        if (!equal) throw validation(`Invalid ConditionExpression: ${expression}`);
        return item[nameOf(names, equal[1]!)]?.S === valueOf(values, equal[2]!);
      }),
    );
  }
}
