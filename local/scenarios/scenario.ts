/**
 * What every scenario shares: its interface, a condition wait that keeps the live view fed,
 * and the accounting of where each sent message ended up.
 */
import { randomUUID } from "node:crypto";
import { DescribeInstancesCommand } from "@aws-sdk/client-ec2";
import { type Message, ReceiveMessageCommand, SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import type { GpuInstanceHost } from "../hosts/gpu-host";
import type { LocalPlatform } from "../platform";
import type { QueueDepth } from "../observe/depth-sampler";
import type { LocalQueue } from "../provision/topology-types";
import type { LiveSnapshot, QueueGauge, ScenarioSummary, Timing, TimingMark } from "../show/view";

export type ScenarioSize = "small" | "default";

export interface ScenarioContext {
  platform: LocalPlatform;
  size: ScenarioSize;
  /** A unique token for this run; scenarios put it in every message they send. */
  runId: string;
  view: (snapshot: LiveSnapshot) => void;
  note: (line: string) => void;
}

export interface Scenario {
  name: string;
  title: string;
  /** Parts of the program the scenario needs (a queue's logical name); it is skipped without them. */
  requires: string[];
  /** Runs only when named with `--scenario` (it takes long), not in the default run. */
  optIn?: boolean;
  /** Needs the GPU tier in this mode (`gpu.capacity.mode`); skipped in the default run without it. */
  gpuMode?: "instance" | "fleet";
  /** Called for every selected scenario right after start-up, before the first one runs (e.g. to let instances age). */
  prepare?(ctx: ScenarioContext): Promise<void>;
  run(ctx: ScenarioContext): Promise<ScenarioSummary>;
}

/**
 * Why the scenario cannot run on this platform (a queue the program does not declare, the other GPU
 * mode), or undefined when it can. Pure over what the platform has.
 */
export function unavailableReason(
  scenario: Pick<Scenario, "requires" | "gpuMode">,
  has: { queues: readonly string[]; gpuInstance: boolean; gpuFleet: boolean },
): string | undefined {
  const missing = scenario.requires.filter((q) => !has.queues.includes(q));
  if (missing.length > 0) return `the program declares no ${missing.join(", ")}`;
  if (scenario.gpuMode === "fleet" && !has.gpuFleet) return "it needs the GPU fleet (gpu.capacity.mode fleet, as in prod); this stack runs one GPU instance";
  if (scenario.gpuMode === "instance" && !has.gpuInstance)
    return "it needs one GPU instance (gpu.capacity.mode instance, as in dev); this stack runs a GPU fleet";
  return undefined;
}

/** Polls `done` until it holds, calling `tick` (the live view) on every poll. Returns false on timeout. */
export async function waitFor(
  done: () => Promise<boolean> | boolean,
  opts: { timeoutMs: number; everyMs?: number; tick?: () => Promise<void> | void },
): Promise<boolean> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    await opts.tick?.();
    if (await done()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 250));
  }
}

/** A queue's messages: visible, in flight and delayed. Pure. */
export const total = (d: QueueDepth): number => d.visible + d.inFlight + d.delayed;

/** Polls until the queues hold nothing visible or in flight (nor delayed, unless `delayed` is false). Returns false on timeout. */
export function waitForEmpty(
  platform: LocalPlatform,
  queues: LocalQueue[],
  opts: { timeoutMs: number; tick?: () => Promise<void> | void; delayed?: boolean },
): Promise<boolean> {
  const held = (d: QueueDepth) => (opts.delayed === false ? d.visible + d.inFlight : total(d));
  return waitFor(async () => (await Promise.all(queues.map((q) => platform.depth(q)))).every((d) => held(d) === 0), opts);
}

/** The stack's one GPU instance (gpu.capacity.mode instance). */
export function gpuOf(platform: LocalPlatform): GpuInstanceHost {
  if (!platform.gpu) throw new Error("the program declares no GPU instance");
  return platform.gpu;
}

/** An EC2 instance's state in moto (`running`, `stopped`, `terminated`…). */
export async function instanceState(platform: LocalPlatform, id: string): Promise<string | undefined> {
  const out = await platform.aws.ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
  return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
}

/** Sends bodies in batches of 10 through the SQS clock proxy; returns the message ids. */
export async function sendAll(platform: LocalPlatform, queue: LocalQueue, bodies: string[], delaySeconds = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < bodies.length; i += 10) {
    const chunk = bodies.slice(i, i + 10);
    const out = await platform.aws.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queue.url,
        Entries: chunk.map((body, j) => ({ Id: String(j), MessageBody: body, ...(delaySeconds > 0 ? { DelaySeconds: delaySeconds } : {}) })),
      }),
    );
    if (out.Failed?.length) throw new Error(`send to ${queue.logicalName} failed: ${JSON.stringify(out.Failed)}`);
    ids.push(...(out.Successful ?? []).map((s) => s.MessageId ?? ""));
  }
  return ids;
}

/**
 * Every message currently visible on a queue that nothing consumes (a quarantine queue, or a
 * DLQ once its consumer is stopped). Received with a zero visibility timeout, so they stay
 * where they are; repeated until a round brings nothing new.
 */
export async function peekAll(platform: LocalPlatform, queue: LocalQueue): Promise<Message[]> {
  const seen = new Map<string, Message>();
  let quietRounds = 0;
  while (quietRounds < 2) {
    const out = await platform.aws.sqsDirect.send(
      new ReceiveMessageCommand({
        QueueUrl: queue.url,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 0,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    const fresh = (out.Messages ?? []).filter((m) => m.MessageId && !seen.has(m.MessageId));
    for (const m of fresh) seen.set(m.MessageId ?? "", m);
    quietRounds = fresh.length === 0 ? quietRounds + 1 : 0;
  }
  return [...seen.values()];
}

export function newRunId(): string {
  return randomUUID().slice(0, 8);
}

/**
 * A wall-time duration as a key timing, with the simulated seconds it stood for at the run's
 * speed (`ctx.platform.clock.speed`); null stays null (the event never happened).
 */
export function timing(wallMs: number | null | undefined, speed: number): Timing | null {
  if (wallMs === null || wallMs === undefined) return null;
  // One decimal: the run's own sampling makes anything finer noise, and it keeps the JSON readable.
  return { wallMs: Math.round(wallMs), simulatedSeconds: Math.round((wallMs * speed) / 100) / 10 };
}

/** Where a key timing starts and ends, as real epoch ms (`Date.now()`); null when it did not happen. */
export type TimingSpan = [from: number | null | undefined, to: number | null | undefined];

/**
 * A scenario's key timings from the instants they run between: the summary's `timings` (wall and
 * simulated) and `marks` (where the HTML report draws them), built together so they agree.
 * A timing whose either end never happened is null and has no mark.
 */
export function keyTimings(speed: number, spans: Record<string, TimingSpan>): { timings: Record<string, Timing | null>; marks: Record<string, TimingMark> } {
  const timings: Record<string, Timing | null> = {};
  const marks: Record<string, TimingMark> = {};
  for (const [name, [from, to]] of Object.entries(spans)) {
    if (from === null || from === undefined || to === null || to === undefined) {
      timings[name] = null;
      continue;
    }
    // An event seen before its anchor (polls race) counts as at the anchor.
    const end = Math.max(from, to);
    timings[name] = timing(end - from, speed);
    marks[name] = { fromMs: from, toMs: end };
  }
  return { timings, marks };
}

/**
 * Quarantined messages, each counted once: a slow consumer can quarantine the same message
 * twice (at-least-once delivery), and both copies carry its `source-message-id`.
 */
export function distinctQuarantined(messages: Message[]): Message[] {
  const byId = new Map<string, Message>();
  for (const m of messages) {
    const reason = m.MessageAttributes?.["quarantine-reason"];
    if (reason === undefined) continue;
    const source = m.MessageAttributes?.["source-message-id"]?.StringValue ?? m.MessageId ?? "";
    if (!byId.has(source)) byId.set(source, m);
  }
  return [...byId.values()];
}

/** One play of a scenario: its context, when it began, the failures it found; it feeds the live view and sums up through here. */
export class ScenarioRun {
  readonly failures: string[] = [];
  readonly platform: LocalPlatform;
  started = Date.now();

  constructor(
    readonly ctx: ScenarioContext,
    readonly name: string,
  ) {
    this.platform = ctx.platform;
  }

  /** The live view: the gauges of the queues by label (returned), and the run's progress, counters and status lines. */
  protected async show(
    queues: Record<string, LocalQueue>,
    progress: LiveSnapshot["progress"],
    counters: LiveSnapshot["counters"],
    status: string[],
  ): Promise<QueueGauge[]> {
    const gauged = await Promise.all(
      Object.entries(queues).map(async ([label, q]) => {
        const d = await this.platform.depth(q);
        return { label, visible: d.visible + d.delayed, inFlight: d.inFlight };
      }),
    );
    this.ctx.view({ scenario: this.name, elapsedMs: Date.now() - this.started, progress, queues: gauged, counters, status });
    return gauged;
  }

  /** Waits for `done`, the live view fed by `tick`: when it held, or null on a timeout (then a failure, when `failure` names one). */
  protected async until(
    done: () => Promise<boolean> | boolean,
    opts: { timeoutMs: number; tick?: () => Promise<void> | void; failure?: string },
  ): Promise<number | null> {
    const held = await waitFor(done, opts);
    if (!held && opts.failure !== undefined) this.failures.push(opts.failure);
    return held ? Date.now() : null;
  }

  /** What is left of the run's messages at the end: on its queue (`remaining`) and in its DLQ (`inDlq`). */
  protected async left(queue: LocalQueue, dlq: LocalQueue): Promise<{ inDlq: number; remaining: number }> {
    const [left, inDlq] = await Promise.all([this.platform.depth(queue), this.platform.depth(dlq)]);
    return { inDlq: total(inDlq), remaining: total(left) };
  }

  /** The summary: the counts (`lost` filled in from the others), the wall time since the run began, and the failures found. */
  protected summarise(s: Omit<ScenarioSummary, "scenario" | "wallMs" | "lost" | "failures">): ScenarioSummary {
    const lost = s.sent - s.processed - s.quarantined - s.inDlq - s.remaining;
    return { scenario: this.name, wallMs: Date.now() - this.started, ...s, failures: this.failures, lost };
  }
}
