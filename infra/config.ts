import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { PRODUCT, retentionNeededSeconds } from "../policy/contract";
import { stackScopeProblems, withStackScopedDefaults } from "./stack-scope";
import type { PlatformSettings, QueueBudget } from "./parts/part-args";
import { alertSubscriptionProblem } from "./components/alert-topic";
import { gpuConfigSchema, ingestConfigSchema, ingestQueueBudgets } from "./parts/ingest.config";
import { retrainingConfigSchema, retrainingQueueBudgets } from "./parts/retraining.config";
import { fleetConfigSchema, fleetQueueBudgets } from "./parts/fleet.config";
import { workerConfigSchema, workerQueueBudgets } from "./parts/worker.config";
import { poolConfigSchema, poolQueueBudgets } from "./parts/pool.config";

/**
 * The stack config, validated with zod before any resource is declared.
 *
 * Keys live under the project namespace (`encache:`) as structured YAML objects, so
 * one `Pulumi.<stack>.yaml` reads like a document and every error can name the
 * full key path (`encache:ingest.window.timeoutSeconds`).
 */

export const PROJECT_NAMESPACE = PRODUCT;

/** Egress one security group's members need beyond HTTPS (`network.extraEgress.<group>`): none unless an operator opens it. */
const extraEgressRules = z
  .array(
    z.object({
      protocol: z.enum(["tcp", "udp"]),
      fromPort: z.number().int().min(0).max(65_535),
      toPort: z.number().int().min(0).max(65_535),
      cidrBlocks: z.array(z.string().regex(/^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/, "must be an IPv4 CIDR")).min(1),
      description: z.string().min(1).max(255),
    }),
  )
  .default([]);

/** The services AWS offers gateway endpoints for. */
export const GATEWAY_ENDPOINT_SERVICES = ["s3", "dynamodb"] as const;

/** CloudWatch's PutMetricAlarm takes at most 5 AlarmActions; every depth alarm gets these and no other. */
export const MAX_ALARM_ACTIONS = 5;

/** The stack config's keys and their rules, before the stack-scoped names are derived (see stack-scope.ts). */
const stackConfigObject = z
  .object({
    /** Short environment name, used in tags and resource names. */
    environment: z.string().regex(/^[a-z][a-z0-9-]{1,15}$/, "must be 2–16 lowercase letters, digits or dashes"),
    /** CloudWatch log retention for every function, in days. */
    logRetentionDays: z
      .number()
      .int()
      .refine((d) => [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653].includes(d), {
        message: "must be a CloudWatch retention value (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, …)",
      }),
    /** Turn on termination/deletion protection for stateful resources (prod). */
    deletionProtection: z.boolean().default(false),
    /** More SNS topic ARNs every alarm notifies, besides the stack's own alert topic. */
    alarmActions: z
      .array(z.string().regex(/^arn:aws[a-z-]*:sns:/, "must be an SNS topic ARN"))
      .max(
        MAX_ALARM_ACTIONS - 1,
        `must name at most ${MAX_ALARM_ACTIONS - 1} topics: CloudWatch takes 5 actions per alarm state, and the program adds the stack's alert topic`,
      )
      .default([]),
    /** Who the stack's alert topic tells. An email subscription stays pending until confirmed. */
    alerts: z
      .object({
        subscriptions: z
          .array(
            z
              .object({
                /** `email`, `email-json`, `https`, `lambda` (this account's function; the stack lets the topic invoke it) or `sms`; not `sqs` (alertSubscriptionProblem says why). */
                protocol: z.string(),
                endpoint: z.string().min(3),
              })
              .superRefine((s, ctx) => {
                const problem = alertSubscriptionProblem(s);
                if (problem) ctx.addIssue({ code: "custom", path: [problem.field], message: problem.message });
              }),
          )
          .default([]),
      })
      .prefault({}),
    network: z
      .object({
        /** IPv4 CIDR of the platform VPC. */
        cidrBlock: z.string().regex(/^(\d{1,3}\.){3}\d{1,3}\/(1[6-9]|2[0-4])$/, "must be an IPv4 CIDR between /16 and /24"),
        /** NAT gateways: one shared (cheap, dev) or one per AZ (resilient, prod). */
        natGateways: z.enum(["Single", "OnePerAz"]).default("Single"),
        /**
         * How many availability zones to spread subnets over, when they are not pinned by ID.
         * @default the number of availabilityZoneIds, else 2
         */
        availabilityZones: z.number().int().min(2).max(3).optional(),
        /**
         * Egress beyond HTTPS that a group's members need, per group: operators decide, so none by
         * default (the GPU's model downloads, the strategy image's data sources…).
         */
        extraEgress: z
          .object({
            ingestConsumers: extraEgressRules,
            ingestGpu: extraEgressRules,
            retrainingTasks: extraEgressRules,
            worker: extraEgressRules,
            poolInstances: extraEgressRules,
          })
          .prefault({}),
        /**
         * The zones, by AZ ID (`use1-az1`): the same physical zone in every account, unlike a name.
         * Pin zones where the GPU instance types and Lambda in a VPC are offered
         * (`aws ec2 describe-instance-type-offerings --location-type availability-zone-id`).
         */
        /**
         * Gateway endpoints in every route table: free, and S3 (ECR's image layers) and DynamoDB
         * traffic then stays off the NAT gateway and its per-GB charge. `[]` routes it through NAT.
         */
        gatewayEndpoints: z
          .array(z.enum(GATEWAY_ENDPOINT_SERVICES))
          .refine((s) => new Set(s).size === s.length, "must not name a service twice")
          .default([...GATEWAY_ENDPOINT_SERVICES]),
        /**
         * Interface endpoints (PrivateLink) by service, e.g. `sqs`, `ecr.api`, `ecr.dkr`, `logs`: each
         * costs about $7.30 a month per zone plus $0.01 per GB, so none unless an operator asks.
         */
        interfaceEndpoints: z
          .array(z.string().regex(/^[a-z0-9-]+(\.[a-z0-9-]+)*$/, "must be a service's endpoint name such as sqs or ecr.dkr"))
          .refine((s) => new Set(s).size === s.length, "must not name a service twice")
          .default([]),
        availabilityZoneIds: z
          .array(z.string().regex(/^[a-z]{2,5}\d-az\d{1,2}$/, "must be an AZ ID such as use1-az1"))
          .min(2, "must name at least 2 zones")
          .max(3, "must name at most 3 zones")
          .refine((ids) => new Set(ids).size === ids.length, "must not name a zone twice")
          .optional(),
      })
      .superRefine((network, ctx) => {
        const ids = network.availabilityZoneIds;
        if (ids && network.availabilityZones !== undefined && network.availabilityZones !== ids.length) {
          ctx.addIssue({
            code: "custom",
            path: ["availabilityZones"],
            message: `is ${network.availabilityZones} but availabilityZoneIds names ${ids.length} zones; drop one of the two`,
          });
        }
      }),
    queues: z
      .object({
        /** Receives before a message moves to its DLQ. Never 1: one transient error would dead-letter it. */
        maxReceiveCount: z.number().int().min(2, "must be at least 2 (1 dead-letters a message on its first transient failure)").max(1000).default(3),
      })
      .default({ maxReceiveCount: 3 }),
    // The parts, 1 to 5.
    gpu: gpuConfigSchema,
    ingest: ingestConfigSchema,
    retraining: retrainingConfigSchema,
    fleet: fleetConfigSchema,
    worker: workerConfigSchema,
    pool: poolConfigSchema,
  })
  .superRefine((cfg, ctx) => {
    for (const issue of queueRetentionProblems(cfg)) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
    for (const issue of stackScopeProblems(cfg)) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  });

/** The stack config: the names two stacks must not share are derived from the environment when unset. */
export const stackConfigSchema = z.preprocess(withStackScopedDefaults, stackConfigObject);

export type StackConfig = z.output<typeof stackConfigObject>;

/** The stack-wide slice of the config. Pure. */
export function platformSettings(c: StackConfig, alertTopicArn?: pulumi.Input<string>): PlatformSettings {
  return {
    environment: c.environment,
    logRetentionDays: c.logRetentionDays,
    deletionProtection: c.deletionProtection,
    alarmActions: [...(alertTopicArn ? [alertTopicArn] : []), ...c.alarmActions],
    maxReceiveCount: c.queues.maxReceiveCount,
  };
}

/** Every source queue of the five parts, each part's from its own config module, with the config keys behind its numbers. Pure. */
export function queueBudgets(cfg: Pick<StackConfig, "gpu" | "ingest" | "retraining" | "fleet" | "worker" | "pool">): QueueBudget[] {
  return [
    ...ingestQueueBudgets({ ingest: cfg.ingest, gpu: cfg.gpu }),
    ...retrainingQueueBudgets(cfg.retraining),
    ...fleetQueueBudgets(cfg.fleet),
    ...workerQueueBudgets(cfg.worker),
    ...poolQueueBudgets(cfg.pool),
  ];
}

/**
 * A queue with a DLQ must keep a message through all its receives, or a failing message expires
 * before it reaches the DLQ and nobody is told. Pure.
 */
export function queueRetentionProblems(
  cfg: Pick<StackConfig, "queues" | "gpu" | "ingest" | "retraining" | "fleet" | "worker" | "pool">,
): Array<{ path: Array<string | number>; message: string }> {
  const receives = cfg.queues.maxReceiveCount;
  return queueBudgets(cfg)
    .filter((q) => q.retentionSeconds < retentionNeededSeconds(q.visibilitySeconds, receives))
    .map((q) => ({
      path: q.path,
      message:
        `the ${q.queue} queue keeps a message ${q.retentionSeconds} s (${q.retentionFrom}), less than its receives need: ` +
        `queues.maxReceiveCount × visibility = ${receives} × ${q.visibilitySeconds} s (${q.visibilityFrom}) = ${retentionNeededSeconds(q.visibilitySeconds, receives)} s; ` +
        "a failing message would expire before it reaches its DLQ",
    }));
}
export type RawStackConfig = z.input<typeof stackConfigObject>;

/** Thrown when the stack config is invalid; every line names a full config key. */
export class StackConfigError extends Error {
  constructor(readonly issues: ReadonlyArray<{ key: string; reason: string }>) {
    super(`Invalid stack config:\n${issues.map((i) => `  ${i.key}: ${i.reason}`).join("\n")}`);
    this.name = "StackConfigError";
  }
}

/** Validates a raw config object. Pure: tests call it without Pulumi. */
export function parseStackConfig(raw: unknown): StackConfig {
  const result = stackConfigSchema.safeParse(raw);
  if (result.success) return result.data;
  throw new StackConfigError(
    result.error.issues.map((issue) => ({
      key: configKey(issue.path),
      reason: issue.code === "invalid_type" && valueAt(raw, issue.path) === undefined ? "is required" : issue.message,
    })),
  );
}

function valueAt(raw: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let node: unknown = raw;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** `["ingest", "window", "timeoutSeconds"]` → `encache:ingest.window.timeoutSeconds`. */
export function configKey(path: ReadonlyArray<PropertyKey>): string {
  if (path.length === 0) return `${PROJECT_NAMESPACE}:<root>`;
  const [head, ...rest] = path;
  return `${PROJECT_NAMESPACE}:${String(head)}${rest.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("")}`;
}

/** The top-level keys the schema knows, so unknown keys in a stack file are reported, not ignored. */
const TOP_LEVEL_KEYS = Object.keys(stackConfigObject.shape) as Array<keyof RawStackConfig>;

/**
 * Reads every `encache:*` key from the running stack and validates it. Call this first,
 * before declaring any resource, so a bad value fails `pulumi up` with the key and reason.
 */
export function loadStackConfig(): StackConfig {
  return stackConfigFrom(pulumi.runtime.allConfig());
}

/**
 * The stack config from Pulumi's flat config map (`encache:gpu` → its JSON), as `pulumi up` or a
 * stack file (plan/stack-files.ts) gives it. Every problem at once, each naming its key.
 */
export function stackConfigFrom(all: Record<string, string>): StackConfig {
  const raw: Record<string, unknown> = {};
  const issues: Array<{ key: string; reason: string }> = [];
  for (const [fullKey, value] of Object.entries(all)) {
    const [namespace, key] = fullKey.split(":", 2);
    if (namespace !== PROJECT_NAMESPACE || key === undefined) continue;
    if (!(TOP_LEVEL_KEYS as string[]).includes(key)) {
      issues.push({ key: fullKey, reason: `is not a known key (known: ${TOP_LEVEL_KEYS.join(", ")})` });
      continue;
    }
    raw[key] = decodeConfigValue(value);
  }
  const accounts = allowedAccountIdsProblem(all[ALLOWED_ACCOUNTS_KEY]);
  if (accounts) issues.push({ key: ALLOWED_ACCOUNTS_KEY, reason: accounts });
  try {
    const config = parseStackConfig(raw);
    if (issues.length > 0) throw new StackConfigError(issues);
    return config;
  } catch (err) {
    // Every problem at once: one `pulumi up` names them all.
    if (err instanceof StackConfigError && err.issues !== issues) throw new StackConfigError([...issues, ...err.issues]);
    throw err;
  }
}

/** The AWS provider's own guard: it refuses to act in any account not listed. */
export const ALLOWED_ACCOUNTS_KEY = "aws:allowedAccountIds";

/**
 * Every stack names the account it may deploy to, so credentials for the wrong account (dev's
 * profile while deploying prod, or the reverse) fail before anything is created. `value` is the
 * config value as Pulumi hands it over (a JSON-encoded list). Pure.
 */
export function allowedAccountIdsProblem(value: string | undefined): string | undefined {
  const howTo = `set it in Pulumi.<stack>.yaml, or: pulumi config set --path '${ALLOWED_ACCOUNTS_KEY}[0]' <12-digit account id>`;
  if (value === undefined) return `is required: name the account this stack deploys to (${howTo})`;
  const ids = decodeConfigValue(value);
  if (!Array.isArray(ids) || ids.length === 0) return `must be a non-empty list of account ids (${howTo})`;
  const bad = ids.filter((id) => typeof id !== "string" || !/^\d{12}$/.test(id));
  if (bad.length > 0) return `${bad.map((id) => JSON.stringify(id)).join(", ")}: each must be a 12-digit account id as a string (quote it in YAML)`;
  return undefined;
}

/** Pulumi hands every value over as a string; objects, numbers and booleans arrive JSON-encoded. */
function decodeConfigValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}
