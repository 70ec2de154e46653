import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { AutoScalingClient, CompleteLifecycleActionCommand } from "@aws-sdk/client-auto-scaling";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { completeLifecycleAction, type DrainReason, imdsReader, readDrainSignal } from "../../../functions/gpu/drain";
import { FakeMetadata } from "../helpers/gpu-gateway";
import { RecordingLogger } from "../helpers/telemetry";

/** IMDSv2 on 127.0.0.1: a token from PUT, every GET checked against it; `expireTokens` makes the current token stale once. */
class FakeImds {
  readonly requests: Array<{ method: string; url: string; token?: string; ttl?: string }> = [];
  private tokens = 0;
  private valid = new Set<string>();
  private server: Server | undefined;
  endpoint = "";

  expireTokens(): void {
    this.valid.clear();
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const token = req.headers["x-aws-ec2-metadata-token"] as string | undefined;
      this.requests.push({
        method: req.method ?? "",
        url: req.url ?? "",
        token,
        ttl: req.headers["x-aws-ec2-metadata-token-ttl-seconds"] as string | undefined,
      });
      if (req.method === "PUT" && req.url === "/latest/api/token") {
        const t = `token-${++this.tokens}`;
        this.valid.add(t);
        res.writeHead(200).end(t);
        return;
      }
      if (!token || !this.valid.has(token)) return void res.writeHead(401).end();
      if (req.url === "/latest/meta-data/instance-id") return void res.writeHead(200).end("i-0abc");
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => this.server?.listen(0, "127.0.0.1", r));
    this.endpoint = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }
}

describe("gpu gateway: drain signals (functions/gpu/drain.ts)", () => {
  describe("the IMDSv2 reader", () => {
    const imds = new FakeImds();
    before(() => imds.start());
    after(() => imds.stop());

    it("takes a session token with its TTL, reuses it, and takes a new one after a 401", async () => {
      const reader = imdsReader({ endpoint: imds.endpoint, fetch, tokenTtlSeconds: 300 });
      expect(await reader.get("instance-id")).to.deep.equal({ status: 200, body: "i-0abc" });
      expect(await reader.get("spot/instance-action")).to.deep.equal({ status: 404, body: "" });
      imds.expireTokens();
      expect(await reader.get("instance-id")).to.deep.equal({ status: 200, body: "i-0abc" });
      expect(imds.requests.map((r) => `${r.method} ${r.url} ${r.token ?? r.ttl}`)).to.deep.equal([
        "PUT /latest/api/token 300",
        "GET /latest/meta-data/instance-id token-1",
        "GET /latest/meta-data/spot/instance-action token-1",
        "GET /latest/meta-data/instance-id token-1",
        "PUT /latest/api/token 300",
        "GET /latest/meta-data/instance-id token-2",
      ]);
    });
  });

  describe("readDrainSignal", () => {
    const cases: Array<[string, Record<string, { status: number; body: string }>, DrainReason | undefined]> = [
      ["nothing out", {}, undefined],
      ["InService", { "autoscaling/target-lifecycle-state": { status: 200, body: "InService" } }, undefined],
      ["Terminated (with a newline)", { "autoscaling/target-lifecycle-state": { status: 200, body: "Terminated\n" } }, "target-lifecycle-terminated"],
      ["a Spot notice", { "spot/instance-action": { status: 200, body: "{}" } }, "spot-interruption"],
      ["a rebalance recommendation", { "events/recommendations/rebalance": { status: 200, body: "{}" } }, "rebalance-recommendation"],
    ];
    for (const [name, answers, reason] of cases)
      it(`${name} → ${reason ?? "no drain"}`, async () => {
        const metadata = new FakeMetadata();
        for (const [p, a] of Object.entries(answers)) metadata.answers.set(p, a);
        expect(await readDrainSignal(metadata)).to.equal(reason);
      });
  });

  describe("completeLifecycleAction", () => {
    const fleet = { groupName: "g", hookName: "drain" };
    const validation = () => Object.assign(new Error("No active Lifecycle Action found"), { name: "ValidationError" });
    const throttled = () => Object.assign(new Error("Rate exceeded"), { name: "Throttling" });

    it("retries through ValidationError and other failures, with growing pauses up to the cap, until it succeeds", async () => {
      const asg = new AutoScalingClient({ region: "us-east-1", credentials: { accessKeyId: "t", secretAccessKey: "t" } });
      const mock = mockClient(asg);
      mock
        .on(CompleteLifecycleActionCommand)
        .rejectsOnce(validation())
        .rejectsOnce(throttled())
        .rejectsOnce(validation())
        .rejectsOnce(validation())
        .resolves({});
      const pauses: number[] = [];
      const logger = new RecordingLogger();
      const ok = await completeLifecycleAction({
        autoScaling: asg,
        instanceId: "i-1",
        fleet,
        logger,
        sleep: async (ms) => void pauses.push(ms),
        baseDelayMs: 1000,
        maxDelayMs: 4000,
      });
      expect(ok).to.equal(true);
      expect(pauses).to.deep.equal([1000, 2000, 4000, 4000]);
      expect(logger.steps()).to.deep.equal([
        "lifecycle_not_active",
        "lifecycle_complete_failed",
        "lifecycle_not_active",
        "lifecycle_not_active",
        "lifecycle_completed",
      ]);
    });

    it("stops when continueWhile says so", async () => {
      const asg = new AutoScalingClient({ region: "us-east-1", credentials: { accessKeyId: "t", secretAccessKey: "t" } });
      mockClient(asg).on(CompleteLifecycleActionCommand).rejects(validation());
      let left = 3;
      const ok = await completeLifecycleAction({
        autoScaling: asg,
        instanceId: "i-1",
        fleet,
        logger: new RecordingLogger(),
        sleep: async () => undefined,
        continueWhile: () => --left > 0,
      });
      expect(ok).to.equal(false);
    });
  });
});
