import type * as pulumi from "@pulumi/pulumi";
import type { ManagedQueue } from "../components/managed-queue";
import type { QueueConsumer } from "../components/queue-consumer";
import type { PlatformDashboardArgs } from "../components/platform-dashboard";
import type { TerminalQueue } from "../components/terminal-queue";

/**
 * What a part declares that the rest of the house reads: its queues and who consumes them, its
 * Powertools services and ECS services, and what it shows on the stack's dashboard. The
 * composition root draws the dashboard over every part's inventory; the mocks tier and the local
 * chaos run read the same inventory as each part records it (its registered `inventory` output,
 * {@link inventoryRecord}), so no list of queues or consumers is kept anywhere else.
 */

/** Code that takes a queue's messages. */
export interface InventoryConsumer {
  /**
   * The consumer's logical name: its QueueConsumer (the Lambda function's name in the program), its
   * ECS service, or the API a caller outside the stack uses (the pool's claim).
   */
  name: string;
  kind: "function" | "ecs-service" | "api";
  /** Its POWERTOOLS_SERVICE_NAME, the `service` dimension of its EMF metrics (absent for an API). */
  service?: pulumi.Input<string>;
  /** The role its code runs with (absent for an API: its callers bring their own). */
  roleArn?: pulumi.Input<string>;
}

/** A Lambda consumer as the inventory lists it. Pure. */
export function functionConsumer(c: QueueConsumer): InventoryConsumer {
  return { name: c.label, kind: "function", service: c.powertoolsServiceName, roleArn: c.role.arn };
}

/** A source queue with its DLQ, and the code on each. */
export interface InventoryQueue {
  queue: ManagedQueue;
  consumers: InventoryConsumer[];
  /** Consumers of the DLQ itself (the ingest DLQ's, which starts the GPU). @default [] */
  dlqConsumers?: InventoryConsumer[];
  /**
   * A pool class's advert queue: a stock of ready instances, not work to drain. The dashboard
   * draws it with the pool, not with the work queues; the chaos run does not wait for it to empty.
   */
  advert?: { className: string; size: number };
}

/** An ECS service that consumes a queue. */
export interface InventoryEcsService {
  name: string;
  clusterName: pulumi.Input<string>;
  serviceName: pulumi.Input<string>;
  /** The queue whose backlog drives its scaling. */
  queueName: pulumi.Input<string>;
  /** The container's POWERTOOLS_SERVICE_NAME. */
  metricsService: string;
  backlogPerTaskTarget: number;
}

/** The part-specific views of the dashboard, each owned by one part. */
export type DashboardViews = Partial<Pick<PlatformDashboardArgs, "ingest" | "worker" | "pool">>;

export interface PartInventory {
  /** The part's name, as the root declares it (`ingest`, `retraining`…). */
  part: string;
  /** Source queues, in the order the part declares them. */
  queues: InventoryQueue[];
  /** Queues at the end of the line (quarantine, schedule DLQs): nothing consumes them. */
  terminalQueues: TerminalQueue[];
  ecsServices: InventoryEcsService[];
  /** What the part shows on the dashboard beyond its queues. */
  views: DashboardViews;
}

/** A part's face: its stack outputs under their public names, and its inventory. */
export interface PartFace<O extends Record<string, pulumi.Input<unknown>>> {
  readonly outputs: O;
  readonly inventory: PartInventory;
}

/**
 * The dashboard's queue rows over every part's inventory: the work queues (not the pool's adverts),
 * then every source queue's DLQ, then the terminal queues, each in part order. Pure.
 */
export function dashboardQueues(inventory: readonly PartInventory[]): Pick<PlatformDashboardArgs, "queues" | "deadLetterQueues"> {
  const sources = inventory.flatMap((p) => p.queues);
  return {
    queues: sources.filter((q) => !q.advert).map((q) => ({ label: q.queue.label, name: q.queue.name })),
    deadLetterQueues: [
      ...sources.map((q) => ({ label: `${q.queue.label}-dlq`, name: q.queue.dlqName })),
      ...inventory.flatMap((p) => p.terminalQueues).map((t) => ({ label: t.label, name: t.name })),
    ],
  };
}

/** The part-specific views, each from the one part that owns it; a view no part gives is an error. Pure. */
export function dashboardViews(inventory: readonly PartInventory[]): Required<DashboardViews> {
  const views: DashboardViews = {};
  for (const p of inventory) {
    for (const [key, view] of Object.entries(p.views) as Array<[keyof DashboardViews, unknown]>) {
      if (views[key] !== undefined) throw new Error(`the dashboard's ${key} view is given by two parts (the second: ${p.part})`);
      (views as Record<string, unknown>)[key] = view;
    }
  }
  const missing = (["ingest", "worker", "pool"] as const).filter((k) => views[k] === undefined);
  if (missing.length > 0) throw new Error(`no part gives the dashboard's ${missing.join(", ")} view`);
  return views as Required<DashboardViews>;
}

/** A part's inventory as plain labels: what it registers as its `inventory` output, and what the plan and the local run read back. */
export interface InventoryRecord {
  part: string;
  queues: Array<{
    /** The source queue's logical name (its DLQ is `dlq`). */
    label: string;
    dlq: string;
    consumers: Array<{ name: string; kind: InventoryConsumer["kind"] }>;
    dlqConsumers: Array<{ name: string; kind: InventoryConsumer["kind"] }>;
    /** The pool class whose adverts it holds. */
    advertClass?: string;
  }>;
  terminalQueues: string[];
  ecsServices: string[];
}

/** Pure. */
export function inventoryRecord(inv: PartInventory): InventoryRecord {
  const consumer = (c: InventoryConsumer) => ({ name: c.name, kind: c.kind });
  return {
    part: inv.part,
    queues: inv.queues.map((q) => ({
      label: q.queue.label,
      dlq: `${q.queue.label}-dlq`,
      consumers: q.consumers.map(consumer),
      dlqConsumers: (q.dlqConsumers ?? []).map(consumer),
      ...(q.advert ? { advertClass: q.advert.className } : {}),
    })),
    terminalQueues: inv.terminalQueues.map((t) => t.label),
    ecsServices: inv.ecsServices.map((s) => s.name),
  };
}

/** The type token prefix of the parts (`encache:parts:Ingest`…). */
export const PART_TYPE_PREFIX = "encache:parts:";

/** Every part's inventory, as the parts registered it, from a recording of the program (the plan's view, the local topology). Pure. */
export function recordedInventory(resources: ReadonlyArray<{ type: string; name: string; outputs?: Record<string, unknown> }>): InventoryRecord[] {
  return resources
    .filter((r) => r.type.startsWith(PART_TYPE_PREFIX))
    .map((r) => {
      const inv = r.outputs?.inventory as InventoryRecord | undefined;
      if (!inv || !Array.isArray(inv.queues)) throw new Error(`part ${r.name} (${r.type}) registered no inventory`);
      return inv;
    });
}

/**
 * The queues a run must see drained: every source queue a consumer drains (not the pool's adverts,
 * which wait for claimers), and every DLQ some code consumes. Logical names, in part order. Pure.
 */
export function drainedQueues(records: readonly InventoryRecord[]): string[] {
  return records.flatMap((p) =>
    p.queues.flatMap((q) => [...(q.advertClass === undefined && q.consumers.length > 0 ? [q.label] : []), ...(q.dlqConsumers.length > 0 ? [q.dlq] : [])]),
  );
}

/** The queues the named consumer takes messages from: source queues and DLQs, logical names. Pure. */
export function queuesConsumedBy(records: readonly InventoryRecord[], consumer: string): string[] {
  return records.flatMap((p) =>
    p.queues.flatMap((q) => [
      ...(q.consumers.some((c) => c.name === consumer) ? [q.label] : []),
      ...(q.dlqConsumers.some((c) => c.name === consumer) ? [q.dlq] : []),
    ]),
  );
}

/** Every consumer the program declares, once each, in part order. Pure. */
export function consumersOf(records: readonly InventoryRecord[]): Array<{ name: string; kind: InventoryConsumer["kind"] }> {
  const seen = new Map<string, { name: string; kind: InventoryConsumer["kind"] }>();
  for (const q of records.flatMap((p) => p.queues)) for (const c of [...q.consumers, ...q.dlqConsumers]) if (!seen.has(c.name)) seen.set(c.name, c);
  return [...seen.values()];
}
