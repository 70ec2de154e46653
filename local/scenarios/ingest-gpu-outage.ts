/**
 * ingest-gpu-outage (docs/parts/ingest.md): with the GPU stopped, segments fail ingest, are redriven to the
 * DLQ and parked there; the DLQ consumer starts the GPU; once it has booted every segment
 * reaches the GPU (through the real gateway, to the fake model). One malformed segment shows quarantine: it is not retried and not lost.
 */
import { DescribeInstancesCommand, StopInstancesCommand } from "@aws-sdk/client-ec2";
import * as path from "node:path";
import { sessionWindows } from "../hosts/fake-model";
import { type GpuInstanceHost, gatewaySteps } from "../hosts/gpu-host";
import type { LocalPlatform } from "../platform";
import type { LocalQueue } from "../provision/topology-types";
import type { ScenarioSummary } from "../show/view";
import { distinctQuarantined, gauges, keyTimings, peekAll, type Scenario, type ScenarioContext, sendAll, summary, waitFor } from "./scenario";

const SIZES = { small: 12, default: 60 } as const;

export const ingestGpuOutage: Scenario = {
  name: "ingest-gpu-outage",
  title: "GPU down: ingest fails, DLQ consumer starts the GPU, backlog drains",
  requires: ["ingest", "ingest-dlq", "ingest-quarantine"],
  gpuMode: "instance",
  async run(ctx: ScenarioContext) {
    const run = new OutageRun(ctx, this.name);
    await run.stopGpu();
    await run.sendSegments();
    await run.waitForBacklogDrained();
    return run.report();
  },
};

/** One play of the scenario: the GPU and queues, the segments sent, when each stage was reached and the failures found. */
class OutageRun {
  readonly failures: string[] = [];
  private readonly platform: LocalPlatform;
  private readonly gpu: GpuInstanceHost;
  private readonly ingest: LocalQueue;
  private readonly dlq: LocalQueue;
  private readonly quarantine: LocalQueue;
  private readonly instanceId: string;
  private readonly n: number;
  private readonly sessionId: string;
  /** The host also counts the instance's first boot at deploy time: only starts from here on are the DLQ consumer's. */
  private startsBefore = 0;
  private started = 0;
  private bodies: string[] = [];
  private firstInDlq: number | null = null;
  private gpuRunning: number | null = null;
  private gpuServing: number | null = null;
  private drained: number | null = null;

  constructor(
    private readonly ctx: ScenarioContext,
    private readonly name: string,
  ) {
    const { platform } = ctx;
    this.platform = platform;
    const gpu = platform.gpu;
    if (!gpu) throw new Error("the program declares no GPU instance");
    this.gpu = gpu;
    this.ingest = platform.queue("ingest");
    this.dlq = platform.queue("ingest-dlq");
    this.quarantine = platform.queue("ingest-quarantine");
    this.instanceId = platform.topology.instances.find((i) => i.logicalName.includes("gpu"))?.id ?? "";
    this.n = SIZES[ctx.size];
    this.sessionId = `outage-${ctx.runId}`;
  }

  /** Prepare: the GPU is stopped, as it is between sessions. */
  async stopGpu(): Promise<void> {
    await this.platform.aws.ec2.send(new StopInstancesCommand({ InstanceIds: [this.instanceId] }));
    await waitFor(() => this.gpu.state().instanceState === "stopped", { timeoutMs: 10_000 });
    this.startsBefore = this.gpu.state().starts;
    this.ctx.note(`GPU ${this.instanceId} stopped; sending ${this.n} segments and 1 malformed one`);
  }

  async sendSegments(): Promise<void> {
    const { sessionId } = this;
    this.started = Date.now();
    this.bodies = Array.from({ length: this.n }, (_, i) => JSON.stringify({ sessionId, userId: "local-user", windowIndex: i, frameCount: 30 }));
    this.bodies.push(JSON.stringify({ sessionId, windowIndex: "not-a-number" }));
    await sendAll(this.platform, this.ingest, this.bodies);
  }

  async waitForBacklogDrained(): Promise<void> {
    const ok = await waitFor(() => this.delivered().got >= this.n, { timeoutMs: 240_000, tick: this.tick });
    if (ok) this.drained = this.delivered().completedAtMs;
    else this.failures.push(`only ${this.delivered().got} of ${this.n} segments reached the GPU`);
    // Let the runtime acknowledge the last batches before counting what is left.
    await waitFor(
      async () => {
        const [a, b] = await Promise.all([this.platform.depth(this.ingest), this.platform.depth(this.dlq)]);
        return a.visible + a.inFlight + b.visible + b.inFlight === 0;
      },
      { timeoutMs: 30_000, tick: this.tick },
    );
  }

  async report(): Promise<ScenarioSummary> {
    const { platform, started, failures } = this;
    const quarantined = distinctQuarantined((await peekAll(platform, this.quarantine)).filter((m) => (m.Body ?? "").includes(this.sessionId)));
    const [left, inDlq] = await Promise.all([platform.depth(this.ingest), platform.depth(this.dlq)]);
    const described = await platform.aws.ec2.send(new DescribeInstancesCommand({ InstanceIds: [this.instanceId] }));
    const finalState = described.Reservations?.[0]?.Instances?.[0]?.State?.Name;
    if (this.startsNow() < 1) failures.push("the DLQ consumer never started the GPU");
    if (finalState !== "running") failures.push(`GPU ended ${finalState}, expected running`);
    if (quarantined.length !== 1) failures.push(`expected the malformed segment in quarantine, found ${quarantined.length}`);

    const { got, twice } = this.delivered();
    return summary({
      scenario: this.name,
      wallMs: Date.now() - started,
      sent: this.bodies.length,
      processed: got,
      quarantined: quarantined.length,
      inDlq: inDlq.visible + inDlq.inFlight + inDlq.delayed,
      remaining: left.visible + left.inFlight + left.delayed,
      ...keyTimings(platform.clock.speed, {
        "first segments in DLQ": [started, this.firstInDlq],
        "GPU running": [started, this.gpuRunning],
        "GPU serving": [started, this.gpuServing],
        "GPU up → backlog drained": [this.gpuServing, this.drained],
      }),
      details: {
        servedTwice: twice,
        gateway: gatewaySteps(path.join(platform.options.workDir, "logs")),
        gpuStarts: this.startsNow(),
        quarantineReason: quarantined[0]?.MessageAttributes?.["quarantine-reason"]?.StringValue ?? null,
      },
      failures,
    });
  }

  private startsNow(): number {
    return this.gpu.state().starts - this.startsBefore;
  }

  /** The segments the GPU's model took, and when the last of the first n distinct ones finished. */
  private delivered() {
    return sessionWindows(this.gpu.ledger, this.sessionId, this.n);
  }

  private readonly tick = async (): Promise<void> => {
    const [q, d, qq] = await gauges(this.platform, [
      ["ingest", this.ingest],
      ["ingest-dlq", this.dlq],
      ["quarantine", this.quarantine],
    ]);
    const now = Date.now();
    if (this.firstInDlq === null && d && d.visible + d.inFlight > 1) this.firstInDlq = now;
    const g = this.gpu.state();
    // The host's own moments, not this tick's: a tick sees a change up to a tick late.
    if (this.gpuRunning === null && g.runningSinceMs !== null && this.startsNow() > 0) this.gpuRunning = g.runningSinceMs;
    if (this.gpuServing === null && g.servingSinceMs !== null && this.startsNow() > 0) this.gpuServing = g.servingSinceMs;
    const done = this.delivered().got;
    this.ctx.view({
      scenario: this.name,
      elapsedMs: now - this.started,
      progress: { done, total: this.n },
      queues: [q, d, qq].filter((x) => x !== undefined),
      counters: { "delivered to GPU": done, "GPU starts": this.startsNow() },
      status: [`GPU ${this.instanceId}: ${g.instanceState}${g.serving ? " (serving)" : g.instanceState === "running" ? " (booting)" : ""}`],
    });
  };
}
