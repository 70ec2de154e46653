import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export type AttributeType = "S" | "N" | "B";

export interface TableIndex {
  name: string;
  hashKey: string;
  rangeKey?: string;
  /** @default "ALL" */
  projectionType?: "ALL" | "KEYS_ONLY" | "INCLUDE";
  /** With `INCLUDE`: the extra attributes. */
  nonKeyAttributes?: string[];
}

export interface TableArgs {
  /** Partition key. */
  hashKey: string;
  /**
   * Sort key.
   * @default undefined
   */
  rangeKey?: string;
  /** Types of every key attribute of the table and its indexes (DynamoDB declares no others). */
  attributes: Record<string, AttributeType>;
  /**
   * Global secondary indexes.
   * @default []
   */
  globalSecondaryIndexes?: TableIndex[];
  /**
   * Attribute holding an epoch-seconds expiry; DynamoDB deletes expired items.
   * @default undefined (no TTL)
   */
  ttlAttribute?: string;
  /**
   * Refuse `DeleteTable` (prod), and mark the table `protect` so Pulumi itself will not delete or
   * replace it: the provider would otherwise switch deletion protection off first.
   * @default false
   */
  deletionProtection?: boolean;
  /**
   * Tags.
   * @default {}
   */
  tags?: Record<string, string>;
}

/** Checks that every key the table and its indexes use is declared, and nothing else is. Pure. */
export function validateTableArgs(args: Pick<TableArgs, "hashKey" | "rangeKey" | "attributes" | "globalSecondaryIndexes">): void {
  const used = new Set([args.hashKey, ...(args.rangeKey ? [args.rangeKey] : [])]);
  for (const gsi of args.globalSecondaryIndexes ?? []) {
    used.add(gsi.hashKey);
    if (gsi.rangeKey) used.add(gsi.rangeKey);
  }
  const declared = new Set(Object.keys(args.attributes));
  const errors: string[] = [];
  for (const k of used) if (!declared.has(k)) errors.push(`key attribute "${k}" has no type in attributes`);
  // DynamoDB rejects attribute definitions that no key uses.
  for (const k of declared) if (!used.has(k)) errors.push(`attribute "${k}" is not a key of the table or an index`);
  const names = (args.globalSecondaryIndexes ?? []).map((g) => g.name);
  if (new Set(names).size !== names.length) errors.push("index names must be unique");
  if (errors.length > 0) throw new Error(`Table: ${errors.join("; ")}`);
}

/**
 * A DynamoDB table the platform's way: on-demand, point-in-time recovery always on, encrypted
 * with a KMS key AWS manages, TTL when asked, deletion protection per stack.
 */
export class Table extends pulumi.ComponentResource {
  readonly table: aws.dynamodb.Table;

  constructor(name: string, args: TableArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:data:Table", name, {}, opts);
    validateTableArgs(args);
    this.table = new aws.dynamodb.Table(
      name,
      {
        billingMode: "PAY_PER_REQUEST",
        hashKey: args.hashKey,
        rangeKey: args.rangeKey,
        attributes: Object.entries(args.attributes).map(([attrName, type]) => ({ name: attrName, type })),
        globalSecondaryIndexes: (args.globalSecondaryIndexes ?? []).map((g) => ({
          name: g.name,
          hashKey: g.hashKey,
          rangeKey: g.rangeKey,
          projectionType: g.projectionType ?? "ALL",
          nonKeyAttributes: g.nonKeyAttributes,
        })),
        ttl: args.ttlAttribute ? { attributeName: args.ttlAttribute, enabled: true } : undefined,
        pointInTimeRecovery: { enabled: true },
        serverSideEncryption: { enabled: true },
        deletionProtectionEnabled: args.deletionProtection ?? false,
        tags: args.tags ?? {},
      },
      { parent: this, protect: args.deletionProtection ?? false },
    );
    this.registerOutputs({ tableName: this.table.name, tableArn: this.table.arn });
  }
}
