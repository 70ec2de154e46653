/**
 * ingest-gpu-outage (docs/parts/ingest.md): with the GPU stopped, segments fail ingest, are redriven to the
 * DLQ and parked there; the DLQ consumer starts the GPU; once it has booted every segment
 * reaches the GPU service. One malformed segment shows quarantine: it is not retried and not lost.
 */
import { DescribeInstancesCommand, StopInstancesCommand } from "@aws-sdk/client-ec2";
import { distinctQuarantined, gauges, peekAll, type Scenario, type ScenarioContext, sendAll, since, summary, waitFor } from "./scenario";

const SIZES = { small: 12, default: 60 } as const;

interface Segment {
  sessionId: string;
  windowIndex: number;
}

export const ingestGpuOutage: Scenario = {
  name: "ingest-gpu-outage",
  title: "GPU down: ingest fails, DLQ consumer starts the GPU, backlog drains",
  requires: ["ingest", "ingest-dlq", "ingest-quarantine"],
  async run(ctx: ScenarioContext) {
    const { platform } = ctx;
    const gpu = platform.gpu;
    if (!gpu) throw new Error("the program declares no GPU instance");
    const ingest = platform.queue("ingest");
    const dlq = platform.queue("ingest-dlq");
    const quarantine = platform.queue("ingest-quarantine");
    const instanceId = platform.topology.instances.find((i) => i.logicalName.includes("gpu"))?.id ?? "";
    const failures: string[] = [];
    const n = SIZES[ctx.size];
    const sessionId = `outage-${ctx.runId}`;

    // Prepare: the GPU is stopped, as it is between sessions.
    await platform.aws.ec2.send(new StopInstancesCommand({ InstanceIds: [instanceId] }));
    await waitFor(() => gpu.state().instanceState === "stopped", { timeoutMs: 10_000 });
    // The simulator also counts the instance's first boot at deploy time: only starts from here on are the DLQ consumer's.
    const startsBefore = gpu.state().starts;
    const startsNow = () => gpu.state().starts - startsBefore;
    ctx.note(`GPU ${instanceId} stopped; sending ${n} segments and 1 malformed one`);

    const started = Date.now();
    const bodies = Array.from({ length: n }, (_, i) => JSON.stringify({ sessionId, userId: "local-user", windowIndex: i, frameCount: 30 }));
    bodies.push(JSON.stringify({ sessionId, windowIndex: "not-a-number" }));
    await sendAll(platform, ingest, bodies);

    let firstInDlq: number | null = null;
    let gpuRunning: number | null = null;
    let gpuServing: number | null = null;
    let drained: number | null = null;
    const delivered = () => {
      const got = new Set<number>();
      let duplicates = 0;
      for (const body of gpu.received()) {
        const s = body as Partial<Segment>;
        if (s.sessionId !== sessionId || typeof s.windowIndex !== "number") continue;
        if (got.has(s.windowIndex)) duplicates += 1;
        got.add(s.windowIndex);
      }
      return { got, duplicates };
    };

    const tick = async () => {
      const [q, d, qq] = await gauges(platform, [
        ["ingest", ingest],
        ["ingest-dlq", dlq],
        ["quarantine", quarantine],
      ]);
      const now = Date.now();
      if (firstInDlq === null && d && d.visible + d.inFlight > 1) firstInDlq = now;
      const g = gpu.state();
      if (gpuRunning === null && g.runningSinceMs !== null && startsNow() > 0) gpuRunning = now;
      if (gpuServing === null && g.serving && startsNow() > 0) gpuServing = now;
      const done = delivered().got.size;
      ctx.view({
        scenario: this.name,
        elapsedMs: now - started,
        progress: { done, total: n },
        queues: [q, d, qq].filter((x) => x !== undefined),
        counters: { "delivered to GPU": done, "GPU starts": startsNow() },
        status: [`GPU ${instanceId}: ${g.instanceState}${g.serving ? " (serving)" : g.instanceState === "running" ? " (booting)" : ""}`],
      });
    };

    const ok = await waitFor(() => delivered().got.size >= n, { timeoutMs: 240_000, tick });
    if (ok) drained = Date.now();
    else failures.push(`only ${delivered().got.size} of ${n} segments reached the GPU`);
    // Let the runtime acknowledge the last batches before counting what is left.
    await waitFor(async () => {
      const [a, b] = await Promise.all([platform.depth(ingest), platform.depth(dlq)]);
      return a.visible + a.inFlight + b.visible + b.inFlight === 0;
    }, { timeoutMs: 30_000, tick });

    const quarantined = distinctQuarantined((await peekAll(platform, quarantine)).filter((m) => (m.Body ?? "").includes(sessionId)));
    const [left, inDlq] = await Promise.all([platform.depth(ingest), platform.depth(dlq)]);
    const described = await platform.aws.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    const finalState = described.Reservations?.[0]?.Instances?.[0]?.State?.Name;
    if (startsNow() < 1) failures.push("the DLQ consumer never started the GPU");
    if (finalState !== "running") failures.push(`GPU ended ${finalState}, expected running`);
    if (quarantined.length !== 1) failures.push(`expected the malformed segment in quarantine, found ${quarantined.length}`);

    const { got, duplicates } = delivered();
    return summary({
      scenario: this.name,
      wallMs: Date.now() - started,
      sent: bodies.length,
      processed: got.size,
      quarantined: quarantined.length,
      inDlq: inDlq.visible + inDlq.inFlight + inDlq.delayed,
      remaining: left.visible + left.inFlight + left.delayed,
      timings: {
        "first segments in DLQ": since(started, firstInDlq),
        "GPU running": since(started, gpuRunning),
        "GPU serving": since(started, gpuServing),
        "GPU up → backlog drained": gpuServing !== null && drained !== null ? drained - gpuServing : null,
      },
      details: { duplicatesDelivered: duplicates, gpuStarts: startsNow(), quarantineReason: quarantined[0]?.MessageAttributes?.["quarantine-reason"]?.StringValue ?? null },
      failures,
    });
  },
};
