/**
 * ingest-gpu-outage (docs/parts/ingest.md): with the GPU stopped, segments fail ingest, are redriven to the
 * DLQ and parked there; the DLQ consumer starts the GPU; once it has booted every segment
 * reaches the GPU (through the real gateway, to the fake model). One malformed segment shows quarantine: it is not retried and not lost.
 */
import { StopInstancesCommand } from "@aws-sdk/client-ec2";
import * as path from "node:path";
import { sessionWindows } from "../hosts/fake-model";
import { gatewaySteps } from "../hosts/gpu-host";
import type { ScenarioSummary } from "../show/view";
import { burstBodies } from "./gpu-fleet-run";
import { distinctQuarantined, gpuOf, instanceState, keyTimings, peekAll, type Scenario, ScenarioRun, sendAll, waitFor, waitForEmpty } from "./scenario";

const SIZES = { small: 12, default: 60 } as const;

export const ingestGpuOutage: Scenario = {
  name: "ingest-gpu-outage",
  title: "GPU down: ingest fails, DLQ consumer starts the GPU, backlog drains",
  requires: ["ingest", "ingest-dlq", "ingest-quarantine"],
  gpuMode: "instance",
  async run(ctx) {
    const run = new OutageRun(ctx, this.name);
    await run.stopGpu();
    await run.sendSegments();
    await run.waitForBacklogDrained();
    return run.report();
  },
};

/** One play of the scenario: the GPU and queues, the segments sent, when each stage was reached and the failures found. */
class OutageRun extends ScenarioRun {
  private readonly gpu = gpuOf(this.platform);
  private readonly ingest = this.platform.queue("ingest");
  private readonly dlq = this.platform.queue("ingest-dlq");
  private readonly quarantine = this.platform.queue("ingest-quarantine");
  private readonly instanceId = this.platform.topology.instances.find((i) => i.logicalName.includes("gpu"))?.id ?? "";
  private readonly n = SIZES[this.ctx.size];
  private readonly sessionId = `outage-${this.ctx.runId}`;
  /** The host also counts the instance's first boot at deploy time: only starts from here on are the DLQ consumer's. */
  private startsBefore = 0;
  private bodies: string[] = [];
  private firstInDlq: number | null = null;
  private gpuRunning: number | null = null;
  private gpuServing: number | null = null;
  private drained: number | null = null;

  /** Prepare: the GPU is stopped, as it is between sessions. */
  async stopGpu(): Promise<void> {
    await this.platform.aws.ec2.send(new StopInstancesCommand({ InstanceIds: [this.instanceId] }));
    await waitFor(() => this.gpu.state().instanceState === "stopped", { timeoutMs: 10_000 });
    this.startsBefore = this.gpu.state().starts;
    this.ctx.note(`GPU ${this.instanceId} stopped; sending ${this.n} segments and 1 malformed one`);
  }

  async sendSegments(): Promise<void> {
    this.started = Date.now();
    this.bodies = [...burstBodies(this.sessionId, this.n), JSON.stringify({ sessionId: this.sessionId, windowIndex: "not-a-number" })];
    await sendAll(this.platform, this.ingest, this.bodies);
  }

  async waitForBacklogDrained(): Promise<void> {
    const ok = await waitFor(() => this.delivered().got >= this.n, { timeoutMs: 240_000, tick: this.tick });
    if (ok) this.drained = this.delivered().completedAtMs;
    else this.failures.push(`only ${this.delivered().got} of ${this.n} segments reached the GPU`);
    // Let the runtime acknowledge the last batches before counting what is left.
    await waitForEmpty(this.platform, [this.ingest, this.dlq], { timeoutMs: 30_000, tick: this.tick, delayed: false });
  }

  async report(): Promise<ScenarioSummary> {
    const { platform, started, failures } = this;
    const quarantined = distinctQuarantined((await peekAll(platform, this.quarantine)).filter((m) => (m.Body ?? "").includes(this.sessionId)));
    const finalState = await instanceState(platform, this.instanceId);
    if (this.startsNow() < 1) failures.push("the DLQ consumer never started the GPU");
    if (finalState !== "running") failures.push(`GPU ended ${finalState}, expected running`);
    if (quarantined.length !== 1) failures.push(`expected the malformed segment in quarantine, found ${quarantined.length}`);

    const { got, twice } = this.delivered();
    return this.summarise({
      sent: this.bodies.length,
      processed: got,
      quarantined: quarantined.length,
      ...(await this.left(this.ingest, this.dlq)),
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
    const g = this.gpu.state();
    // The host's own moments, not this tick's: a tick sees a change up to a tick late.
    if (this.gpuRunning === null && g.runningSinceMs !== null && this.startsNow() > 0) this.gpuRunning = g.runningSinceMs;
    if (this.gpuServing === null && g.servingSinceMs !== null && this.startsNow() > 0) this.gpuServing = g.servingSinceMs;
    const done = this.delivered().got;
    const queues = { ingest: this.ingest, "ingest-dlq": this.dlq, quarantine: this.quarantine };
    const [, d] = await this.show(queues, { done, total: this.n }, { "delivered to GPU": done, "GPU starts": this.startsNow() }, [
      `GPU ${this.instanceId}: ${g.instanceState}${g.serving ? " (serving)" : g.instanceState === "running" ? " (booting)" : ""}`,
    ]);
    if (this.firstInDlq === null && d && d.visible + d.inFlight > 1) this.firstInDlq = Date.now();
  };
}
