/**
 * The local run's one poller of queue depths. Every round reads every queue of the program at one
 * instant and hands the readings to its listeners: the alarm watcher (./alarm-watch.ts) keeps one
 * round per simulated minute, as SQS publishes its metrics; the report recorder
 * (./report-recorder.ts) keeps them all, for the HTML report's timelines. One poller, so moto is
 * asked once per round whoever listens.
 */
import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SimClock } from "../hosts/clock";
import type { LocalQueue } from "../provision/topology-types";

export interface QueueDepth {
  visible: number;
  inFlight: number;
  delayed: number;
}

/** One round: every queue's depth at one instant. */
export interface DepthRound {
  /** 0 for the round taken at start, then 1, 2…: rounds come every `everyRealMs`, so an index is a time slot. */
  index: number;
  /** Real epoch ms when the round began. */
  realTimeMs: number;
  /** Simulated epoch ms at the same instant. */
  simTimeMs: number;
  /** By queue name; a queue whose reading failed is missing (a gap, not a zero). */
  depths: Map<string, QueueDepth>;
}

export type DepthListener = (round: DepthRound) => Promise<void> | void;

/** What a listener needs of the sampler: tests hand the alarm watcher a fake. */
export interface DepthSource {
  readonly everyRealMs: number;
  /** Returns the unsubscribe function. */
  subscribe(listener: DepthListener): () => void;
}

/** Reads a queue's three depth attributes in one call. */
export async function readDepth(sqs: SQSClient, queueUrl: string): Promise<QueueDepth> {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
    }),
  );
  const a = out.Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

/**
 * Real ms between two rounds: the largest whole fraction of `slotRealMs` (the alarms' one
 * simulated minute) that is no longer than `targetRealMs`, so every alarm slot starts on a round
 * and a listener keeping one round in n keeps the alarms' cadence exactly. Pure.
 */
export function roundEveryRealMs(slotRealMs: number, targetRealMs: number): number {
  return slotRealMs / Math.max(1, Math.ceil(slotRealMs / targetRealMs));
}

export interface DepthSamplerOptions {
  queues: LocalQueue[];
  clock: SimClock;
  /** Straight to moto (not the SQS clock proxy): a reading must not wait on the simulated clock. */
  sqs: SQSClient;
  everyRealMs: number;
  note: (line: string) => void;
}

export class DepthSampler implements DepthSource {
  readonly everyRealMs: number;
  private readonly listeners = new Set<DepthListener>();
  private index = 0;
  private timer?: NodeJS.Timeout;
  private round?: Promise<void>;
  private stopped = false;
  private readonly failureNoted = new Set<string>();

  constructor(private readonly opts: DepthSamplerOptions) {
    this.everyRealMs = opts.everyRealMs;
  }

  subscribe(listener: DepthListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Takes a round at once, then one every `everyRealMs` until `stop()`. */
  start(): void {
    if (this.opts.queues.length === 0) return;
    const tick = () => {
      const started = Date.now();
      this.round = this.takeRound()
        // Every reading and listener handles its own failure; this is for a bug, which must not end the run.
        .catch((err: unknown) => this.opts.note(`queue depths: a sampling round failed: ${(err as Error).stack ?? String(err)}`))
        .finally(() => {
          if (this.stopped) return;
          // Keeps the cadence: the round's own duration is not added to the interval.
          this.timer = setTimeout(tick, Math.max(0, started + this.everyRealMs - Date.now()));
          // Sampling must not keep the process alive after the run.
          this.timer.unref();
        });
    };
    tick();
  }

  /** Stops after the round under way, whose listeners still finish (an alarm's last state change is still published). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.round;
  }

  private async takeRound(): Promise<void> {
    const realTimeMs = Date.now();
    const simTimeMs = this.opts.clock.now();
    const read = await Promise.allSettled(this.opts.queues.map((q) => readDepth(this.opts.sqs, q.url)));
    const depths = new Map<string, QueueDepth>();
    read.forEach((r, i) => {
      const queue = this.opts.queues[i];
      if (!queue) return;
      if (r.status === "fulfilled") depths.set(queue.name, r.value);
      else if (!this.failureNoted.has(queue.name)) {
        // Once per queue: a flapping moto must not flood the view.
        this.failureNoted.add(queue.name);
        this.opts.note(
          `queue depths: reading ${queue.logicalName} failed (${(r.reason as Error).message}); missed readings are gaps (missing data to the alarms)`,
        );
      }
    });
    const round: DepthRound = { index: this.index++, realTimeMs, simTimeMs, depths };
    const results = await Promise.allSettled([...this.listeners].map(async (l) => l(round)));
    for (const r of results) {
      if (r.status === "rejected") this.opts.note(`queue depths: a listener failed: ${(r.reason as Error).stack ?? String(r.reason)}`);
    }
  }
}
