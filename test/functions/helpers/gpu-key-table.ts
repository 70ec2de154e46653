import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, type DeleteCommandInput, DynamoDBDocumentClient, UpdateCommand, type UpdateCommandInput } from "@aws-sdk/lib-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import { type AwsClientStub, mockClient } from "aws-sdk-client-mock";
import type { KeyItem } from "../../../functions/gpu/keys";
import { conditionFailed } from "./dynamodb-errors";

type Item = Record<string, unknown>;

/**
 * What happens to the next write the table receives: applied with its answer lost (the SDK gave
 * up after the write landed), failed before applying, or a step that runs first (another
 * instance's write landing just before it), which may answer with an error in the table's stead.
 */
export type TableFault = "lost" | "unapplied" | ((table: FakeKeyTable) => Error | undefined);

/**
 * The key table behind aws-sdk-client-mock: it evaluates the ConditionExpression and
 * UpdateExpression text the gateway actually sends (the subset `writeInput` produces:
 * attribute_not_exists, `=`, `<`, AND, OR, parentheses, SET and REMOVE), so a unit test checks the
 * expressions, not a copy of the conditions.
 */
export class FakeKeyTable {
  readonly items = new Map<string, Item>();
  readonly faults: TableFault[] = [];
  /** Every write is failing (DynamoDB unavailable after the SDK's retries). */
  down = false;
  readonly db: DynamoDBDocumentClient;
  readonly mock: AwsClientStub<DynamoDBDocumentClient>;

  constructor() {
    this.db = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } }));
    this.mock = mockClient(this.db);
    this.mock.on(UpdateCommand).callsFake((input: UpdateCommandInput) => this.apply(input, "update"));
    this.mock.on(DeleteCommand).callsFake((input: DeleteCommandInput) => this.apply(input, "delete"));
  }

  /** Puts an item as another instance (or an earlier run) left it. */
  put(item: KeyItem): void {
    this.items.set(item.window_key, { ...item });
  }

  item(key: string): Item | undefined {
    return this.items.get(key);
  }

  private apply(input: UpdateCommandInput | DeleteCommandInput, kind: "update" | "delete"): object {
    const fault = this.faults.shift();
    if (this.down || fault === "unapplied") throw Object.assign(new Error("connect ETIMEDOUT"), { name: "TimeoutError" });
    if (typeof fault === "function") {
      const error = fault(this);
      if (error) throw error;
    }
    const key = String(input.Key?.window_key);
    const old = this.items.get(key);
    const names = input.ExpressionAttributeNames ?? {};
    const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
    if (input.ConditionExpression && !evaluate(input.ConditionExpression, old, names, values)) {
      throw conditionFailed(old && input.ReturnValuesOnConditionCheckFailure === "ALL_OLD" ? marshall(old) : undefined);
    }
    if (kind === "delete") this.items.delete(key);
    else this.items.set(key, update({ ...(old ?? {}), window_key: key }, (input as UpdateCommandInput).UpdateExpression ?? "", names, values));
    if (fault === "lost") throw Object.assign(new Error("read ECONNRESET"), { name: "TimeoutError" });
    return {};
  }
}

function update(item: Item, expression: string, names: Record<string, string>, values: Record<string, unknown>): Item {
  const m = /^(?:SET (.+?))?\s*(?:REMOVE (.+))?$/.exec(expression.trim());
  if (!m) throw new Error(`fake table: unsupported UpdateExpression ${expression}`);
  for (const part of (m[1] ?? "").split(",").filter((s) => s.trim())) {
    const [name, value] = part.split("=").map((s) => s.trim());
    item[names[name!]!] = values[value!];
  }
  for (const name of (m[2] ?? "").split(",").filter((s) => s.trim())) delete item[names[name.trim()]!];
  return item;
}

/** Evaluates the condition subset the gateway writes, by recursive descent over its tokens. */
export function evaluate(expression: string, item: Item | undefined, names: Record<string, string>, values: Record<string, unknown>): boolean {
  const tokens = expression.match(/attribute_not_exists\(#\w+\)|#\w+ [=<] :\w+|\(|\)|AND|OR/g) ?? [];
  let i = 0;
  const primary = (): boolean => {
    const t = tokens[i++];
    if (t === "(") {
      const v = or();
      if (tokens[i++] !== ")") throw new Error(`fake table: unbalanced ${expression}`);
      return v;
    }
    const absent = /^attribute_not_exists\((#\w+)\)$/.exec(t ?? "");
    if (absent) return item === undefined || item[names[absent[1]!]!] === undefined;
    const cmp = /^(#\w+) ([=<]) (:\w+)$/.exec(t ?? "");
    if (!cmp) throw new Error(`fake table: unsupported token ${t} in ${expression}`);
    const actual = item?.[names[cmp[1]!]!];
    const expected = values[cmp[3]!];
    if (cmp[2] === "=") return actual !== undefined && actual === expected;
    return typeof actual === "number" && typeof expected === "number" && actual < expected;
  };
  const and = (): boolean => {
    let v = primary();
    while (tokens[i] === "AND") {
      i++;
      const r = primary();
      v = v && r;
    }
    return v;
  };
  const or = (): boolean => {
    let v = and();
    while (tokens[i] === "OR") {
      i++;
      const r = and();
      v = v || r;
    }
    return v;
  };
  const result = or();
  if (i !== tokens.length) throw new Error(`fake table: trailing tokens in ${expression}`);
  return result;
}
