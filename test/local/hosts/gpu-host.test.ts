/**
 * What runs on a local GPU instance (local/hosts/gpu-host.ts, fake-model.ts, local/aws/instance-metadata.ts,
 * autoscaling-proxy.ts): the gateway's environment read out of cloud-init user data, the fake model,
 * the IMDSv2 endpoint, the CompleteLifecycleAction stand-in, and the dev instance's host running the
 * real gateway bundle while moto shows the instance running.
 */
import { AutoScalingClient, CompleteLifecycleActionCommand, DescribeAutoScalingGroupsCommand } from "@aws-sdk/client-auto-scaling";
import { CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DescribeImagesCommand, EC2Client, RunInstancesCommand, StartInstancesCommand, StopInstancesCommand } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { InstanceMetadata } from "../../../local/aws/instance-metadata";
import { completionOf, type LifecycleCompletion, AutoScalingProxy } from "../../../local/aws/autoscaling-proxy";
import { FakeModel, type ProcessedWindow } from "../../../local/hosts/fake-model";
import { GpuHost, GpuInstanceHost, gatewayEnvFromUserData, gatewaySteps, writeGatewayBundle } from "../../../local/hosts/gpu-host";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";
import { outcome, until } from "../helpers/stub-target";

describe("local GPU host", () => {
  describe("gatewayEnvFromUserData", () => {
    const cases: Array<{ title: string; userData: string | undefined; want: Record<string, string> | undefined }> = [
      {
        title: "the write_files entry's KEY=value lines",
        userData:
          "#cloud-config\nwrite_files:\n  - path: /etc/other\n    content: X=1\n  - path: /etc/encache/gpu-gateway.env\n    content: |\n      GPU_SERVICE_PORT=8080\n      GPU_KEYS_TABLE=keys-a=b\n",
        want: { GPU_SERVICE_PORT: "8080", GPU_KEYS_TABLE: "keys-a=b" },
      },
      {
        title: "a base64-encoded entry",
        userData: `#cloud-config\nwrite_files:\n  - path: /etc/encache/gpu-gateway.env\n    encoding: b64\n    content: ${Buffer.from("AWS_REGION=eu-west-1\n").toString("base64")}\n`,
        want: { AWS_REGION: "eu-west-1" },
      },
      { title: "no entry at the gateway's path", userData: "#cloud-config\nwrite_files:\n  - path: /etc/other\n    content: X=1\n", want: undefined },
      { title: "a shell script, not cloud-config", userData: "#!/bin/bash\necho hi\n", want: undefined },
      { title: "no user data", userData: undefined, want: undefined },
    ];
    for (const c of cases) {
      it(c.title, () => {
        // Act
        const env = gatewayEnvFromUserData(c.userData);
        // Assess
        expect(env).to.deep.equal(c.want);
      });
    }
  });

  describe("FakeModel", () => {
    let model: FakeModel;
    let ledger: ProcessedWindow[];
    let base: string;
    const post = (key: string, body = "{}") =>
      outcome(`${base}/invocations`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body });

    beforeEach(async () => {
      ledger = [] as ProcessedWindow[];
      model = new FakeModel({ instanceId: "i-1", path: "/invocations", healthPath: "/ping", windowRealMs: 200, slots: 1, ledger });
      base = await model.start();
    });
    afterEach(() => model.kill());

    it("works one window per slot, the rest in arrival order, and counts each key it processed", async () => {
      // Act
      const answers = await Promise.all([post("k/1", '{"w":1}'), post("k/2", '{"w":2}'), post("k/1", '{"w":1}')]);
      // Assess
      expect(answers).to.deep.equal([
        { status: 200, body: { processed: true, key: "k/1" } },
        { status: 200, body: { processed: true, key: "k/2" } },
        { status: 200, body: { processed: true, key: "k/1" } },
      ]);
      expect(ledger.map((w) => [w.instanceId, w.key])).to.deep.equal([
        ["i-1", "k/1"],
        ["i-1", "k/2"],
        ["i-1", "k/1"],
      ]);
      expect(new Set(ledger.map((w) => w.key)).size).to.equal(2);
    });

    it("answers its health path, refuses a non-JSON body, and counts nothing cut off by kill()", async () => {
      // Act
      const health = await outcome(`${base}/ping`);
      const bad = await post("k/bad", "not json");
      const pending = post("k/cut");
      await until("the window at the model", () => model.outstanding() === 1);
      await model.kill();
      const cut = await pending;
      // Assess
      expect(health).to.deep.equal({ status: 200, body: { ok: true } });
      expect(bad).to.have.property("status", 400);
      expect(cut).to.be.a("string");
      expect(ledger).to.deep.equal([]);
    });
  });

  describe("InstanceMetadata (IMDSv2)", () => {
    let imds: InstanceMetadata;
    let base: string;
    const token = async () => {
      const res = await fetch(`${base}/latest/api/token`, { method: "PUT", headers: { "x-aws-ec2-metadata-token-ttl-seconds": "60" } });
      return res.text();
    };
    const read = async (item: string, t?: string) => {
      const res = await fetch(`${base}/latest/meta-data/${item}`, { headers: t ? { "x-aws-ec2-metadata-token": t } : {} });
      return [res.status, await res.text()];
    };

    beforeEach(async () => {
      imds = new InstanceMetadata("i-0abc");
      base = await imds.start();
    });
    afterEach(() => imds.stop());

    it("answers a token for a TTL, and only token-bearing reads", async () => {
      // Act
      const noTtl = await fetch(`${base}/latest/api/token`, { method: "PUT" });
      const t = await token();
      // Assess
      expect(noTtl.status).to.equal(400);
      expect(await read("instance-id")).to.deep.equal([401, ""]);
      expect(await read("instance-id", "forged")).to.deep.equal([401, ""]);
      expect(await read("instance-id", t)).to.deep.equal([200, "i-0abc"]);
    });

    it("reports the lifecycle state, and the Spot notice and rebalance recommendation only once sent", async () => {
      // Prepare
      const t = await token();
      const before = [
        await read("autoscaling/target-lifecycle-state", t),
        await read("spot/instance-action", t),
        await read("events/recommendations/rebalance", t),
      ];
      // Act
      imds.targetLifecycleState = "Terminated";
      imds.noticeSpotInterruption(Date.parse("2026-01-01T00:02:00.500Z"));
      imds.recommendRebalance(Date.parse("2026-01-01T00:00:00Z"));
      // Assess
      expect(before).to.deep.equal([
        [200, "InService"],
        [404, ""],
        [404, ""],
      ]);
      expect(await read("autoscaling/target-lifecycle-state", t)).to.deep.equal([200, "Terminated"]);
      expect(await read("spot/instance-action", t)).to.deep.equal([200, '{"action":"terminate","time":"2026-01-01T00:02:00Z"}']);
      expect(await read("events/recommendations/rebalance", t)).to.deep.equal([200, '{"noticeTime":"2026-01-01T00:00:00Z"}']);
      expect(await read("placement/region", t)).to.deep.equal([404, ""]);
    });
  });

  describe("AutoScalingProxy (moto has no CompleteLifecycleAction)", () => {
    it("completionOf reads the query-protocol call, and nothing else", () => {
      // Act
      const body =
        "Action=CompleteLifecycleAction&Version=2011-01-01&InstanceId=i-1&AutoScalingGroupName=g&LifecycleHookName=drain&LifecycleActionResult=CONTINUE";
      // Assess
      expect(completionOf(body)).to.deep.equal({ instanceId: "i-1", groupName: "g", hookName: "drain" });
      expect(completionOf("Action=DescribeAutoScalingGroups")).to.equal(undefined);
    });

    it("answers CompleteLifecycleAction by the fleet (ValidationError when none is active) and passes the rest to moto", async () => {
      // Prepare
      await resetMoto();
      const seen: LifecycleCompletion[] = [];
      const proxy = new AutoScalingProxy(motoEndpoint(), (c) => {
        seen.push(c);
        return c.instanceId === "i-leaving";
      });
      const client = new AutoScalingClient({ endpoint: await proxy.start(), maxAttempts: 1 });
      const complete = (id: string) =>
        client
          .send(
            new CompleteLifecycleActionCommand({ InstanceId: id, AutoScalingGroupName: "g", LifecycleHookName: "drain", LifecycleActionResult: "CONTINUE" }),
          )
          .then(
            () => "ok",
            (err: Error) => `${err.name}: ${err.message}`,
          );
      try {
        // Act
        const done = await complete("i-leaving");
        const refused = await complete("i-inservice");
        const passed = await client.send(new DescribeAutoScalingGroupsCommand({}));
        // Assess
        expect(done).to.equal("ok");
        expect(refused).to.equal("ValidationError: No active Lifecycle Action found with instance ID i-inservice");
        expect(passed.AutoScalingGroups).to.deep.equal([]);
        expect(seen.map((c) => c.instanceId)).to.deep.equal(["i-leaving", "i-inservice"]);
      } finally {
        client.destroy();
        await proxy.stop();
      }
    });
  });

  describe("GpuInstanceHost: the dev instance runs the real gateway while moto shows it running", function () {
    this.timeout(120_000);
    const TABLE = "encache-gpu-keys-host-test";
    let dir: string;
    let bundlePath: string;

    before(function () {
      this.timeout(120_000);
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-host-test-"));
      bundlePath = writeGatewayBundle(dir);
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    /** A stopped instance in moto with the gateway's host over it (`restartAfterMs`: a killed gateway comes back). */
    async function instanceHost(restartAfterMs?: number) {
      await resetMoto();
      const ec2 = new EC2Client({});
      await new DynamoDBClient({}).send(
        new CreateTableCommand({
          TableName: TABLE,
          BillingMode: "PAY_PER_REQUEST",
          AttributeDefinitions: [{ AttributeName: "window_key", AttributeType: "S" }],
          KeySchema: [{ AttributeName: "window_key", KeyType: "HASH" }],
        }),
      );
      const { Images } = await ec2.send(new DescribeImagesCommand({ Owners: ["amazon"] }));
      const launched = await ec2.send(new RunInstancesCommand({ ImageId: Images?.[0]?.ImageId, InstanceType: "g5.xlarge", MinCount: 1, MaxCount: 1 }));
      const instanceId = launched.Instances?.[0]?.InstanceId ?? "";
      await ec2.send(new StopInstancesCommand({ InstanceIds: [instanceId] }));
      const ledger = [] as ProcessedWindow[];
      const host = await GpuHost.create({
        instanceId,
        bundlePath,
        logDir: dir,
        programEnv: {
          GPU_SERVICE_PORT: "8080",
          GPU_SERVICE_PATH: "/ingest/window",
          GPU_STATUS_PATH: "/status",
          GPU_MODEL_URL: "http://127.0.0.1:9000",
          GPU_MODEL_PATH: "/invocations",
          GPU_MODEL_HEALTH_PATH: "/ping",
          GPU_MODEL_CONCURRENCY: "2",
          GPU_MODEL_TIMEOUT_MS: "10000",
          GPU_KEYS_TABLE: TABLE,
          GPU_KEY_LEASE_SECONDS: "60",
          GPU_DRAIN_POLL_SECONDS: "60",
          AWS_REGION: "us-east-1",
        },
        awsEnv: { AWS_ENDPOINT_URL: motoEndpoint(), AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: "testing", AWS_SECRET_ACCESS_KEY: "testing" },
        speed: 60,
        model: { windowRealMs: 10, slots: 2, ledger },
        ...(restartAfterMs !== undefined ? { restartAfterMs } : {}),
      });
      const gpu = new GpuInstanceHost({ ec2, bootDelayMs: 300, pollMs: 20 }, host, ledger);
      return { ec2, instanceId, host, gpu, ledger };
    }

    it("unreachable until the boot delay has passed, serves through the gateway to the model, drains on a stop", async () => {
      // Prepare
      const { ec2, instanceId, host, gpu } = await instanceHost();
      await gpu.start();
      const base = `http://127.0.0.1:${host.port}`;
      const post = (key: string) =>
        outcome(`${base}/ingest/window`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body: `{"k":"${key}"}` });
      try {
        // Act
        const whileStopped = await post("s/0");
        await ec2.send(new StartInstancesCommand({ InstanceIds: [instanceId] }));
        await until("running seen", () => gpu.state().instanceState === "running");
        const whileBooting = await post("s/0");
        await until("the gateway answering its status", async () => typeof (await outcome(`${base}/status`)) !== "string", 20_000);
        const first = await post("s/1");
        const repeat = await post("s/1");
        await ec2.send(new StopInstancesCommand({ InstanceIds: [instanceId] }));
        await until("the gateway gone", () => !host.running(), 20_000);
        const afterStop = await post("s/2");
        // Assess
        expect(whileStopped).to.match(/fetch failed/);
        expect(whileBooting).to.match(/fetch failed/);
        expect(first).to.deep.equal({ status: 200, body: { processed: true, key: "s/1" } });
        expect(repeat).to.have.property("status", 200);
        expect(afterStop).to.match(/fetch failed/);
        expect(gpu.received()).to.deep.equal([{ k: "s/1" }]);
        expect(gpu.state()).to.deep.include({ instanceState: "stopped", serving: false, starts: 1 });
        expect(gatewaySteps(dir)).to.deep.include({ window_claimed: 1, window_done: 1, window_repeat: 1, drain_started: 1 });
      } finally {
        await gpu.stop();
        ec2.destroy();
      }
    });
    const kills: Array<{ name: string; restartAfterMs?: number; back: boolean }> = [
      { name: "a gateway SIGKILLed mid-life is restarted on its port, and answers a done key from the table", restartAfterMs: 100, back: true },
      { name: "without a restart delay, a killed gateway stays down", back: false },
    ];
    for (const k of kills)
      it(k.name, async () => {
        // Prepare
        const { ec2, instanceId, host, gpu } = await instanceHost(k.restartAfterMs);
        const base = `http://127.0.0.1:${host.port}`;
        const post = (key: string) =>
          outcome(`${base}/ingest/window`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body: `{"k":"${key}"}` });
        try {
          await gpu.start();
          await ec2.send(new StartInstancesCommand({ InstanceIds: [instanceId] }));
          await until("the gateway answering its status", async () => typeof (await outcome(`${base}/status`)) !== "string", 20_000);
          const first = await post("s/1");
          const pid = host.pid();

          // Act
          process.kill(pid ?? 0, "SIGKILL");
          if (k.back) await until("a fresh gateway answering", async () => host.pid() !== pid && typeof (await outcome(`${base}/status`)) !== "string", 20_000);
          else await new Promise((r) => setTimeout(r, 1000));
          const after = await post("s/1");

          // Assess
          expect(first).to.have.property("status", 200);
          expect(host.restarts()).to.equal(k.back ? 1 : 0);
          if (k.back) {
            expect(after).to.have.property("status", 200);
            expect(gpu.received()).to.deep.equal([{ k: "s/1" }]);
          } else {
            expect(after).to.match(/fetch failed/);
            expect(host.pid()).to.equal(undefined);
          }
        } finally {
          await gpu.stop();
          ec2.destroy();
        }
      });
  });
});
