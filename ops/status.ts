/** `ops status`: every queue, the GPU, the worker service and the pool, on one screen (or `--json`). */
import { DescribeServicesCommand, DescribeTasksCommand, GetTaskProtectionCommand, ListTasksCommand } from "@aws-sdk/client-ecs";
import type { OpsClients } from "./aws";
import { type GpuView, readGpu } from "./gpu";
import { type OpsQueue, queuesOf, type StackOutputs } from "./outputs";
import { oldestAgeSeconds, type QueueDepth, readDepth } from "./queues";

export interface QueueStatus extends QueueDepth {
  name: string;
  kind: OpsQueue["kind"];
  /** Seconds; null when CloudWatch has no datapoint. */
  oldestAgeSeconds: number | null;
}

export interface WorkerTaskStatus {
  taskArn: string;
  lastStatus: string;
  protectionEnabled: boolean | null;
  protectionExpiresAt: string | null;
}

export interface WorkerStatus {
  service: string;
  desired: number;
  running: number;
  tasks: WorkerTaskStatus[];
}

export interface StatusReport {
  stack: string;
  queues: QueueStatus[];
  gpu: GpuView;
  worker: WorkerStatus | null;
  /** Each pool class's advertised size: the adverts waiting on its queue. */
  pools: Array<{ className: string; advertised: number }>;
}

export async function readStatus(c: OpsClients, stack: string, outputs: StackOutputs): Promise<StatusReport> {
  const queues = await Promise.all(
    queuesOf(outputs).map(async (q) => {
      const [depth, age] = await Promise.all([readDepth(c, q), oldestAgeSeconds(c, q)]);
      return { q, status: { name: q.name, kind: q.kind, ...depth, oldestAgeSeconds: age } };
    }),
  );
  const pools = queues.flatMap(({ q, status }) => (q.advertClass ? [{ className: q.advertClass, advertised: status.visible }] : []));
  const [gpu, worker] = await Promise.all([readGpu(c, outputs), readWorker(c, outputs)]);
  return { stack, queues: queues.map((x) => x.status), gpu, worker, pools };
}

/** The worker service's counts, its tasks and each one's scale-in protection. */
async function readWorker(c: OpsClients, outputs: StackOutputs): Promise<WorkerStatus | null> {
  const service = outputs.workerServiceName;
  if (!service) return null;
  const cluster = outputs.clusterName;
  const described = await c.ecs.send(new DescribeServicesCommand({ cluster, services: [service] }));
  const s = described.services?.[0];
  const listed = await c.ecs.send(new ListTasksCommand({ cluster, serviceName: service }));
  const arns = listed.taskArns ?? [];
  if (arns.length === 0) return { service, desired: s?.desiredCount ?? 0, running: s?.runningCount ?? 0, tasks: [] };
  const [tasks, protection] = await Promise.all([
    c.ecs.send(new DescribeTasksCommand({ cluster, tasks: arns })),
    c.ecs.send(new GetTaskProtectionCommand({ cluster, tasks: arns })),
  ]);
  const byArn = new Map((protection.protectedTasks ?? []).map((p) => [p.taskArn, p]));
  return {
    service,
    desired: s?.desiredCount ?? 0,
    running: s?.runningCount ?? 0,
    tasks: (tasks.tasks ?? []).map((t) => {
      const p = byArn.get(t.taskArn);
      return {
        taskArn: t.taskArn ?? "",
        lastStatus: t.lastStatus ?? "UNKNOWN",
        protectionEnabled: p ? p.protectionEnabled === true : null,
        protectionExpiresAt: p?.expirationDate ? p.expirationDate.toISOString() : null,
      };
    }),
  };
}

const age = (s: number | null) => (s === null ? "–" : s < 120 ? `${Math.round(s)} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`);
const pad = (v: string | number, n: number) => String(v).padEnd(n);
const padLeft = (v: string | number, n: number) => String(v).padStart(n);

/** One screen. Pure. */
export function renderStatus(r: StatusReport): string {
  const lines = [`stack ${r.stack}`, "", "queues                              visible  in flight  delayed  oldest"];
  const work = r.queues.filter((q) => q.kind === "source");
  const dead = r.queues.filter((q) => q.kind !== "source");
  for (const q of work)
    lines.push(`  ${pad(q.name, 32)}${padLeft(q.visible, 9)}${padLeft(q.inFlight, 11)}${padLeft(q.delayed, 9)}  ${age(q.oldestAgeSeconds)}`);
  lines.push("", "dead letters and quarantine          depth  oldest");
  for (const q of dead) {
    const depth = q.visible + q.inFlight + q.delayed;
    lines.push(`  ${pad(q.name, 32)}${padLeft(depth, 7)}  ${age(q.oldestAgeSeconds)}${depth > 0 ? "   ← needs a look (docs/operations.md)" : ""}`);
  }
  lines.push("", `gpu (${r.gpu.mode})`, `  ${r.gpu.summary}`);
  for (const rec of r.gpu.spotBreaker?.recorded ?? []) lines.push(`  spot interruption: ${rec.instanceId} at ${rec.at}`);
  if (r.worker) {
    lines.push("", `worker service ${r.worker.service}: ${r.worker.running} running of ${r.worker.desired} desired`);
    for (const t of r.worker.tasks) {
      const p = t.protectionEnabled === null ? "protection unknown" : t.protectionEnabled ? `protected until ${t.protectionExpiresAt ?? "?"}` : "not protected";
      lines.push(`  ${t.taskArn.split("/").at(-1) ?? t.taskArn}  ${t.lastStatus}  ${p}`);
    }
  }
  if (r.pools.length > 0) {
    lines.push("", "pool: advertised instances per class");
    for (const p of r.pools) lines.push(`  ${pad(p.className, 32)}${padLeft(p.advertised, 7)}`);
  }
  return lines.join("\n");
}
