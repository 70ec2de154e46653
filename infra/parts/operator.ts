import * as pulumi from "@pulumi/pulumi";
import { ENVIRONMENT_TAG } from "../../policy/contract";
import { OPERATOR_FLEET_GRANTS, OPERATOR_GRANTS, OPERATOR_INSTANCE_GRANTS } from "../../ops/iam";
import { groupArnPattern } from "../components/gpu-fleet";
import type { Statement } from "../iam/document";
import { arnOf, statementsFor } from "../iam/grants";
import type { PartInventory } from "./inventory";

/** Where the operator's symbolic resources (ops/iam.ts) live in this stack. */
export interface OperatorAccess {
  region: string;
  accountId: pulumi.Input<string>;
  environment: string;
  /** The stack's source queues (each with a DLQ). */
  sourceQueueArns: pulumi.Input<string>[];
  /** Their DLQs. */
  dlqArns: pulumi.Input<string>[];
  /** Quarantine queues and Scheduler's DLQs. */
  terminalQueueArns: pulumi.Input<string>[];
  /** The quarantine queues among them (a release deletes there; Scheduler's DLQs are only read). */
  quarantineQueueArns: pulumi.Input<string>[];
  /** The queues whose consumers quarantine, where a release resends a message. */
  quarantineSourceArns: pulumi.Input<string>[];
  /** The worker's ECS service. */
  worker: { clusterName: pulumi.Input<string>; clusterArn: pulumi.Input<string>; serviceName: pulumi.Input<string> };
  gpu: { mode: "instance"; nameTag: string; holdTag: string } | { mode: "fleet"; groupName: string; holdTag: string };
}

/**
 * The operator policy's statements: the grants `ops` declares (ops/iam.ts), bound to this stack's
 * queues, its worker service and its GPU. Changes to the GPU carry the stack's tags (instance mode)
 * or name its group (fleet mode), and a hold may write the hold tag and no other key. Pure.
 */
export function operatorStatements(a: OperatorAccess): Statement[] {
  const ecs = (kind: string, tail: pulumi.Input<string>) => arnOf("arn:aws:ecs:", a.region, ":", a.accountId, `:${kind}/`, a.worker.clusterName, tail);
  const common = statementsFor(OPERATOR_GRANTS, {
    "*": { resource: "*" },
    "stack-queues": { resource: [...a.sourceQueueArns, ...a.dlqArns, ...a.terminalQueueArns] },
    "dead-letter-queues": { resource: [...a.dlqArns, ...a.terminalQueueArns] },
    "quarantine-queues": { resource: a.quarantineQueueArns },
    "redrivable-dlqs": { resource: a.dlqArns },
    "redrive-sources": { resource: a.sourceQueueArns },
    "quarantine-sources": { resource: a.quarantineSourceArns },
    "worker-service": { resource: ecs("service", pulumi.concat("/", a.worker.serviceName)) },
    // ListTasks' one resource type is the container instance, and `ops status` names none (it lists
    // by service): IAM then authorises the call on `*`, which a container-instance ARN never matches.
    // ecs:cluster keeps it to the platform's cluster (as the launcher's grant, infra/parts/retraining.ts).
    "worker-cluster": { resource: "*", condition: { ArnEquals: { "ecs:cluster": a.worker.clusterArn } } },
    "worker-tasks": { resource: ecs("task", "/*") },
  });
  const holdOnly = (tag: string) => ({ "ForAllValues:StringEquals": { "aws:TagKeys": [tag] } });
  if (a.gpu.mode === "fleet") {
    const group = {
      resource: groupArnPattern(a.region, a.accountId, a.gpu.groupName),
      condition: { StringEquals: { [`aws:ResourceTag/${ENVIRONMENT_TAG}`]: a.environment } },
    };
    return [
      ...common,
      ...statementsFor(OPERATOR_FLEET_GRANTS, {
        "*": { resource: "*" },
        "stack-gpu-group": group,
        "stack-gpu-group-hold-tag": { ...group, condition: { ...group.condition, ...holdOnly(a.gpu.holdTag) } },
      }),
    ];
  }
  const instance = {
    resource: arnOf("arn:aws:ec2:", a.region, ":", a.accountId, ":instance/*"),
    condition: { StringEquals: { "aws:ResourceTag/Name": a.gpu.nameTag, [`aws:ResourceTag/${ENVIRONMENT_TAG}`]: a.environment } },
  };
  return [
    ...common,
    ...statementsFor(OPERATOR_INSTANCE_GRANTS, {
      "*": { resource: "*" },
      "stack-gpu": instance,
      "stack-gpu-hold-tag": { ...instance, condition: { ...instance.condition, ...holdOnly(a.gpu.holdTag) } },
    }),
  ];
}

/** One queue as `ops` finds it in the stack outputs (`opsQueues`), by its logical name. */
export interface OpsQueueOutput {
  url: pulumi.Input<string>;
  arn: pulumi.Input<string>;
  kind: "source" | "dlq" | "quarantine" | "schedule-dlq";
  /** A DLQ's source queue, a source queue's DLQ (logical names). */
  source?: string;
  dlq?: string;
  /** A DLQ that code consumes (the ingest DLQ's GPU auto-starter): a peek there competes with it. */
  consumed?: boolean;
  /** A pool class's advert queue: its depth is the class's advertised size. */
  advertClass?: string;
}

/** Every queue of the stack for `ops`, from the parts' inventories, in part order. Pure. */
export function opsQueues(inventory: readonly PartInventory[]): Record<string, OpsQueueOutput> {
  const out: Record<string, OpsQueueOutput> = {};
  for (const part of inventory) {
    for (const q of part.queues) {
      const label = q.queue.label;
      const dlq = `${label}-dlq`;
      out[label] = { url: q.queue.url, arn: q.queue.arn, kind: "source", dlq, ...(q.advert ? { advertClass: q.advert.className } : {}) };
      out[dlq] = { url: q.queue.dlqUrl, arn: q.queue.dlqArn, kind: "dlq", source: label, consumed: (q.dlqConsumers ?? []).length > 0 };
    }
    for (const t of part.terminalQueues) out[t.label] = { url: t.url, arn: t.arn, kind: t.role === "quarantine" ? "quarantine" : "schedule-dlq" };
  }
  return out;
}
