/**
 * `ops gpu status|hold|release|stop|size`, as the program defines the GPU in each capacity mode
 * (functions/gpu/idle-decision.ts, scale-decision.ts): the hold tag (`true`, or an ISO time it
 * ends at) on the instance or on the Auto Scaling group keeps the GPU on; the idle stop stops the
 * instance, or takes the group's desired capacity to 0.
 *
 * The hold tag means something only to the idle check or the scaler: Auto Scaling ignores it. A
 * size sets the group's desired capacity, which Auto Scaling keeps whatever the scaler does, until
 * the scaler's next tick sizes it to the backlog again (docs/operations.md, ingest-gpu-scaler-dlq-depth).
 */
import {
  CreateOrUpdateTagsCommand,
  DeleteTagsCommand as DeleteGroupTagsCommand,
  DescribeAutoScalingGroupsCommand,
  SetDesiredCapacityCommand,
} from "@aws-sdk/client-auto-scaling";
import { CreateTagsCommand, DeleteTagsCommand, DescribeInstancesCommand, StopInstancesCommand } from "@aws-sdk/client-ec2";
import { holdActive } from "../functions/gpu/idle-decision";
import { spotBreaker } from "../functions/gpu/spot-breaker";
import type { OpsClients } from "./aws";
import type { StackOutputs } from "./outputs";

export interface GpuView {
  mode: "instance" | "fleet";
  /** The instance id, or the group's name. */
  target: string;
  /** Instance mode: EC2's state name. Fleet mode: `desired N, in service M`. */
  state: string;
  /** The hold tag's value, if set. */
  hold: string | null;
  holdActive: boolean;
  idleStopMinutes: number;
  /** Fleet mode: the group's sizes. */
  capacity?: { desired: number; min: number; max: number; inService: number };
  /** Fleet mode with Spot: the Spot breaker, as the group's interruption records say now. */
  spotBreaker?: SpotBreakerView;
  summary: string;
}

export interface SpotBreakerView {
  open: boolean;
  /** While open: when the group returns to its configured mix (ISO 8601). */
  until: string | null;
  /** Interruptions recorded within the window before now. */
  inWindow: number;
  windowMinutes: number;
  /** Every record the breaker still keeps, oldest first. */
  recorded: Array<{ instanceId: string; at: string }>;
}

/** The breaker's line in the GPU's summary. Pure. */
export function breakerText(b: SpotBreakerView): string {
  const counted = `${b.inWindow} interruption${b.inWindow === 1 ? "" : "s"} in the last ${b.windowMinutes} min`;
  return b.open ? `Spot breaker OPEN until ${b.until} (on demand only; ${counted})` : `Spot breaker closed (${counted})`;
}

export class GpuRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "GpuRefusal";
  }
}

export async function readGpu(c: OpsClients, outputs: StackOutputs, nowMs: number = Date.now()): Promise<GpuView> {
  const { holdTag, idleStopMinutes, mode } = outputs.opsGpu;
  let target: string;
  let state: string;
  let hold: string | null;
  let capacity: GpuView["capacity"];
  let breaker: SpotBreakerView | undefined;
  if (mode === "fleet") {
    target = outputs.gpuFleetGroupName ?? "";
    const out = await c.autoscaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [target] }));
    const g = out.AutoScalingGroups?.[0];
    if (!g) throw new GpuRefusal(`the GPU group ${target} does not exist`);
    const inService = (g.Instances ?? []).filter((i) => i.LifecycleState === "InService").length;
    capacity = { desired: g.DesiredCapacity ?? 0, min: g.MinSize ?? 0, max: g.MaxSize ?? 0, inService };
    state = `desired ${capacity.desired}, in service ${inService}, max ${capacity.max}`;
    hold = g.Tags?.find((t) => t.Key === holdTag)?.Value ?? null;
    const settings = outputs.opsGpu.spotBreaker;
    if (settings) {
      const tags = Object.fromEntries((g.Tags ?? []).flatMap((t) => (t.Key !== undefined ? [[t.Key, t.Value ?? ""]] : [])));
      const b = spotBreaker(tags, nowMs, settings);
      breaker = {
        open: b.open,
        until: b.open && b.trip ? new Date(b.trip.untilMs).toISOString() : null,
        inWindow: b.inWindow,
        windowMinutes: settings.windowMinutes,
        recorded: b.recorded.map((r) => ({ instanceId: r.instanceId, at: new Date(r.atMs).toISOString() })),
      };
    }
  } else {
    target = outputs.gpuInstanceId ?? "";
    const out = await c.ec2.send(new DescribeInstancesCommand({ InstanceIds: [target] }));
    const i = out.Reservations?.[0]?.Instances?.[0];
    if (!i) throw new GpuRefusal(`the GPU instance ${target} does not exist`);
    state = i.State?.Name ?? "unknown";
    hold = i.Tags?.find((t) => t.Key === holdTag)?.Value ?? null;
  }
  const held = holdActive(hold ?? undefined, nowMs);
  const idle = idleStopMinutes > 0 ? `idle stop after ${idleStopMinutes} min` : "no idle stop";
  const holdText = hold === null ? "no hold" : held ? `held (${holdTag}=${hold})` : `hold tag ${holdTag}=${hold} (not active)`;
  return {
    mode,
    target,
    state,
    hold,
    holdActive: held,
    idleStopMinutes,
    ...(capacity ? { capacity } : {}),
    ...(breaker ? { spotBreaker: breaker } : {}),
    summary: `${target}: ${state}; ${holdText}; ${idle}${breaker ? `; ${breakerText(breaker)}` : ""}`,
  };
}

/** Pure: `--until` as the hold tag's value (an ISO time in the future), or `true` without it. */
export function holdValue(until: string | undefined, nowMs: number): string {
  if (until === undefined) return "true";
  const t = Date.parse(until);
  if (!Number.isFinite(t)) throw new GpuRefusal(`--until ${until}: not a time (use ISO 8601, e.g. 2026-11-28T08:00:00Z)`);
  if (t <= nowMs) throw new GpuRefusal(`--until ${until}: already past`);
  return new Date(t).toISOString();
}

export async function holdGpu(c: OpsClients, outputs: StackOutputs, value: string): Promise<void> {
  const { holdTag, mode } = outputs.opsGpu;
  if (mode === "fleet") {
    const group = outputs.gpuFleetGroupName ?? "";
    await c.autoscaling.send(
      new CreateOrUpdateTagsCommand({
        Tags: [{ ResourceId: group, ResourceType: "auto-scaling-group", Key: holdTag, Value: value, PropagateAtLaunch: false }],
      }),
    );
  } else {
    await c.ec2.send(new CreateTagsCommand({ Resources: [outputs.gpuInstanceId ?? ""], Tags: [{ Key: holdTag, Value: value }] }));
  }
}

export async function releaseGpu(c: OpsClients, outputs: StackOutputs): Promise<void> {
  const { holdTag, mode } = outputs.opsGpu;
  if (mode === "fleet") {
    await c.autoscaling.send(
      new DeleteGroupTagsCommand({ Tags: [{ ResourceId: outputs.gpuFleetGroupName ?? "", ResourceType: "auto-scaling-group", Key: holdTag }] }),
    );
  } else {
    await c.ec2.send(new DeleteTagsCommand({ Resources: [outputs.gpuInstanceId ?? ""], Tags: [{ Key: holdTag }] }));
  }
}

/** Stops the GPU now, as the idle stop would; refused while a hold is on (release it first). */
export async function stopGpu(c: OpsClients, outputs: StackOutputs, view: GpuView): Promise<void> {
  if (view.holdActive) throw new GpuRefusal(`the GPU is held (${outputs.opsGpu.holdTag}=${view.hold}): \`ops gpu release\` first`);
  if (outputs.opsGpu.mode === "fleet") {
    await c.autoscaling.send(
      new SetDesiredCapacityCommand({ AutoScalingGroupName: outputs.gpuFleetGroupName ?? "", DesiredCapacity: 0, HonorCooldown: false }),
    );
  } else {
    await c.ec2.send(new StopInstancesCommand({ InstanceIds: [outputs.gpuInstanceId ?? ""] }));
  }
}

/**
 * Why `gpu size N` may not go ahead on this GPU, or undefined when it may. Pure. Instance mode has
 * one instance and no group: there is no size to set. A size outside the group's min and max is
 * refused here, as Auto Scaling would refuse it; 0 while held is a stop, refused as `gpu stop` is.
 */
export function sizeRefusal(view: GpuView, holdTag: string, n: number): string | undefined {
  if (view.mode !== "fleet" || !view.capacity) {
    return `instance mode has one GPU instance and no group to size: \`ops gpu stop\` stops it, \`ops gpu hold\` keeps it on, and the ingest DLQ consumer starts it when windows wait`;
  }
  const { min, max } = view.capacity;
  if (n < min || n > max) return `size ${n}: the group ${view.target} takes ${min} to ${max} instances (its min and max size)`;
  if (n === 0 && view.holdActive) return `the GPU is held (${holdTag}=${view.hold}): \`ops gpu release\` first`;
  return undefined;
}

/** Sets the group's desired capacity to `n` now (no cooldown), after {@link sizeRefusal}. */
export async function sizeGpu(c: OpsClients, outputs: StackOutputs, view: GpuView, n: number): Promise<void> {
  const why = sizeRefusal(view, outputs.opsGpu.holdTag, n);
  if (why) throw new GpuRefusal(why);
  await c.autoscaling.send(new SetDesiredCapacityCommand({ AutoScalingGroupName: outputs.gpuFleetGroupName ?? "", DesiredCapacity: n, HonorCooldown: false }));
}
