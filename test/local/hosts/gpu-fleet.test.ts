/**
 * The GPU fleet stand-in (local/hosts/gpu-fleet.ts): the pure market and cost rules as tables, then
 * `GpuFleetSimulator` around a real Auto Scaling group in moto (moto launches and terminates the
 * group's instances on SetDesiredCapacity; the simulator plays boots, the load balancer, the hook and
 * Spot interruptions), each instance running the real gateway bundle in front of a fake model, its
 * keys in moto's DynamoDB, its lifecycle action completed through the local proxy. Simulated time
 * runs at speed 100: a 10 s boot is 100 ms; the gateways poll their metadata every real second.
 */
import {
  AutoScalingClient,
  CreateAutoScalingGroupCommand,
  DescribeAutoScalingGroupsCommand,
  SetDesiredCapacityCommand,
  SetInstanceProtectionCommand,
} from "@aws-sdk/client-auto-scaling";
import { CreateLaunchTemplateCommand, DescribeImagesCommand, DescribeInstancesCommand, DescribeSubnetsCommand, EC2Client } from "@aws-sdk/client-ec2";
import { CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutRuleCommand, PutTargetsCommand } from "@aws-sdk/client-eventbridge";
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { spotSignalOf, spotSignalPattern } from "../../../functions/gpu/spot-events";
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AutoScalingProxy } from "../../../local/aws/autoscaling-proxy";
import { SimClock } from "../../../local/hosts/clock";
import type { ProcessedWindow } from "../../../local/hosts/fake-model";
import { GpuHost, writeGatewayBundle } from "../../../local/hosts/gpu-host";
import { fleetCostUsd, type GpuFleetOptions, GpuFleetSimulator, type Market, nextMarket, onDemandCount } from "../../../local/hosts/gpu-fleet";
import type { LocalFleet } from "../../../local/provision/topology-types";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";
import { outcome, until } from "../helpers/stub-target";

type Spot = NonNullable<LocalFleet["spot"]>;
const spot = (onDemandBaseCapacity: number, onDemandPercentageAboveBaseCapacity: number): Spot => ({
  onDemandBaseCapacity,
  onDemandPercentageAboveBaseCapacity,
  instanceTypes: ["g5.xlarge"],
});

describe("GPU fleet", () => {
  describe("onDemandCount (AWS rounds the on-demand share above the base up)", () => {
    const cases: Array<{ size: number; spot: Spot | undefined; want: number }> = [
      { size: 4, spot: undefined, want: 4 },
      { size: 0, spot: spot(1, 25), want: 0 },
      { size: 1, spot: spot(1, 25), want: 1 },
      { size: 2, spot: spot(1, 25), want: 2 },
      { size: 4, spot: spot(1, 25), want: 2 },
      { size: 5, spot: spot(1, 25), want: 2 },
      { size: 6, spot: spot(1, 25), want: 3 },
      { size: 3, spot: spot(2, 0), want: 2 },
      { size: 1, spot: spot(2, 0), want: 1 },
      { size: 4, spot: spot(0, 0), want: 0 },
      { size: 4, spot: spot(0, 100), want: 4 },
      { size: 4, spot: spot(0, 50), want: 2 },
      { size: 3, spot: spot(0, 50), want: 2 },
    ];
    for (const c of cases) {
      const label = c.spot ? `base ${c.spot.onDemandBaseCapacity}, ${c.spot.onDemandPercentageAboveBaseCapacity} % above` : "on-demand group";
      it(`${label}, size ${c.size} → ${c.want} on-demand`, () => {
        // Prepare: the table row. Act
        const n = onDemandCount(c.size, c.spot);
        // Assess
        expect(n).to.equal(c.want);
      });
    }
  });

  describe("nextMarket (the market of the next launch, given the live ones)", () => {
    const od: Market = "on-demand";
    const sp: Market = "spot";
    const cases: Array<{ name: string; live: Market[]; spot: Spot | undefined; want: Market }> = [
      { name: "an on-demand group launches on-demand", live: [od, od], spot: undefined, want: od },
      { name: "the first instance fills the base", live: [], spot: spot(1, 25), want: od },
      { name: "the second rounds 25 % of 1 up to on-demand", live: [od], spot: spot(1, 25), want: od },
      { name: "the third is Spot (25 % of 2 rounds up to 1, already there)", live: [od, od], spot: spot(1, 25), want: sp },
      { name: "the fourth is Spot (25 % of 3 rounds up to 1)", live: [od, od, sp], spot: spot(1, 25), want: sp },
      { name: "a lost on-demand instance is replaced on-demand", live: [od, sp, sp], spot: spot(1, 25), want: od },
      { name: "all Spot above a base of 0", live: [], spot: spot(0, 0), want: sp },
      { name: "after the base, 0 % on-demand is Spot", live: [od], spot: spot(1, 0), want: sp },
    ];
    for (const c of cases) {
      it(c.name, () => {
        // Prepare: the table row. Act
        const m = nextMarket(c.live, c.spot);
        // Assess
        expect(m).to.equal(c.want);
      });
    }
  });

  describe("fleetCostUsd", () => {
    const prices = { "g5.xlarge": 1.0, "g5.2xlarge": 1.212 };
    const cases: Array<{ name: string; lives: Parameters<typeof fleetCostUsd>[0]; discount: number; want: ReturnType<typeof fleetCostUsd> }> = [
      { name: "no lives cost nothing", lives: [], discount: 0.6, want: { usd: 0, unpriced: [] } },
      {
        name: "an on-demand hour at the type's price",
        lives: [{ instanceType: "g5.2xlarge", market: "on-demand", simSeconds: 3600 }],
        discount: 0.6,
        want: { usd: 1.21, unpriced: [] },
      },
      {
        name: "a Spot hour at the discounted price",
        lives: [{ instanceType: "g5.xlarge", market: "spot", simSeconds: 3600 }],
        discount: 0.6,
        want: { usd: 0.4, unpriced: [] },
      },
      {
        name: "lives add up, then round to cents",
        lives: [
          { instanceType: "g5.xlarge", market: "on-demand", simSeconds: 1800 },
          { instanceType: "g5.xlarge", market: "spot", simSeconds: 1800 },
          { instanceType: "g5.2xlarge", market: "on-demand", simSeconds: 7200 },
        ],
        discount: 0.7,
        want: { usd: 0.5 + 0.15 + 2.42, unpriced: [] },
      },
      {
        name: "an unpriced type is listed once and left out of the sum",
        lives: [
          { instanceType: "g9.xlarge", market: "spot", simSeconds: 3600 },
          { instanceType: "g9.xlarge", market: "on-demand", simSeconds: 3600 },
          { instanceType: "g5.xlarge", market: "on-demand", simSeconds: 3600 },
        ],
        discount: 0.6,
        want: { usd: 1, unpriced: ["g9.xlarge"] },
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        // Prepare: the table row. Act
        const cost = fleetCostUsd(c.lives, prices, c.discount);
        // Assess
        expect(cost).to.deep.equal(c.want);
      });
    }
  });

  describe("GpuFleetSimulator around moto's Auto Scaling group", function () {
    this.timeout(60_000);
    const TABLE = "encache-gpu-keys-test";
    const GROUP = "encache-gpu-fleet-test";
    const PORT = 8080;
    const DNS = "internal-encache-gpu-test-123.us-east-1.elb.amazonaws.com";
    const SERVICE_PATH = "/ingest/window";
    // A base of one on-demand instance, Spot above it.
    const fleet: LocalFleet = {
      urn: "urn:pulumi:test::encache::aws:autoscaling/group:Group::gpu-fleet",
      logicalName: "gpu-fleet",
      groupName: GROUP,
      maxSize: 4,
      spot: spot(1, 0),
      warmPoolMinSize: 0,
      // 3 real seconds: the gateways read their metadata once a real second.
      drainHookSeconds: 300,
      drainHookName: "drain",
      loadBalancer: {
        dnsName: DNS,
        port: PORT,
        healthCheck: { path: "/status", intervalSeconds: 5, healthyThreshold: 2, unhealthyThreshold: 2, timeoutSeconds: 2 },
      },
    };
    let autoscaling: AutoScalingClient;
    let ec2: EC2Client;
    let sim: GpuFleetSimulator | undefined;
    let routes: Record<string, string>;
    let notes: string[];
    let dir: string;
    let bundlePath: string;
    let lifecycle: AutoScalingProxy;
    let ledger: ProcessedWindow[];
    /** The program's gateway environment, as the user data writes it (addresses are the host's). */
    const programEnv = {
      GPU_SERVICE_PORT: String(PORT),
      GPU_SERVICE_PATH: "/ingest/window",
      GPU_STATUS_PATH: "/status",
      GPU_MODEL_URL: "http://127.0.0.1:9000",
      GPU_MODEL_PATH: "/invocations",
      GPU_MODEL_HEALTH_PATH: "/ping",
      GPU_MODEL_CONCURRENCY: "1",
      GPU_MODEL_TIMEOUT_MS: "10000",
      GPU_KEYS_TABLE: TABLE,
      GPU_KEY_LEASE_SECONDS: "60",
      GPU_DRAIN_POLL_SECONDS: "1",
      GPU_FLEET_GROUP_NAME: GROUP,
      GPU_DRAIN_HOOK_NAME: "drain",
      AWS_REGION: "us-east-1",
    };

    before(function () {
      this.timeout(120_000);
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-fleet-test-"));
      bundlePath = writeGatewayBundle(dir);
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    async function createGroup(): Promise<void> {
      const { Images } = await ec2.send(new DescribeImagesCommand({ Owners: ["amazon"] }));
      const { Subnets } = await ec2.send(new DescribeSubnetsCommand({}));
      await ec2.send(
        new CreateLaunchTemplateCommand({ LaunchTemplateName: "gpu", LaunchTemplateData: { ImageId: Images?.[0]?.ImageId, InstanceType: "g5.xlarge" } }),
      );
      await autoscaling.send(
        new CreateAutoScalingGroupCommand({
          AutoScalingGroupName: GROUP,
          LaunchTemplate: { LaunchTemplateName: "gpu", Version: "$Latest" },
          MinSize: 0,
          MaxSize: 4,
          DesiredCapacity: 0,
          VPCZoneIdentifier: Subnets?.[0]?.SubnetId,
        }),
      );
    }
    async function startSim(windowSimMs: number, shape: LocalFleet = fleet, extra: Partial<GpuFleetOptions> = {}): Promise<GpuFleetSimulator> {
      const awsEnv = {
        AWS_ENDPOINT_URL: motoEndpoint(),
        AWS_ENDPOINT_URL_AUTO_SCALING: await lifecycle.start(),
        AWS_REGION: "us-east-1",
        AWS_ACCESS_KEY_ID: "testing",
        AWS_SECRET_ACCESS_KEY: "testing",
      };
      sim = new GpuFleetSimulator({
        autoscaling,
        ec2,
        fleet: shape,
        clock: new SimClock(100),
        bootSimMs: 10_000,
        warmStartSimMs: 1_000,
        host: (instanceId) =>
          GpuHost.create({ instanceId, bundlePath, logDir: dir, programEnv, awsEnv, speed: 100, model: { windowRealMs: windowSimMs / 100, slots: 1, ledger } }),
        ledger,
        setRoutes: (r) => {
          routes = r;
        },
        note: (line) => notes.push(line),
        pollRealMs: 30,
        ...extra,
      });
      await sim.start();
      return sim;
    }
    const desire = (n: number) => autoscaling.send(new SetDesiredCapacityCommand({ AutoScalingGroupName: GROUP, DesiredCapacity: n }));
    const lbUrl = () => `http://${routes[`${DNS}:${PORT}`]}${SERVICE_PATH}`;
    const post = (body: object, key: string) =>
      outcome(lbUrl(), { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify(body) });
    const live = (s: GpuFleetSimulator) => s.instances().filter((r) => r.goneAtMs === null);
    async function serving(s: GpuFleetSimulator, n: number): Promise<void> {
      await until(`${n} instances serving`, () => s.snapshot().healthy === n && live(s).length === n, 20_000);
    }
    async function privateIps(ids: string[]): Promise<Record<string, string>> {
      const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: ids }));
      return Object.fromEntries((out.Reservations ?? []).flatMap((r) => r.Instances ?? []).map((i) => [i.InstanceId ?? "", i.PrivateIpAddress ?? ""]));
    }
    async function inServiceInMoto(): Promise<number> {
      const g = (await autoscaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [GROUP] }))).AutoScalingGroups?.[0];
      return (g?.Instances ?? []).filter((i) => i.LifecycleState === "InService").length;
    }

    beforeEach(async () => {
      await resetMoto();
      autoscaling = new AutoScalingClient({});
      ec2 = new EC2Client({});
      routes = {};
      notes = [];
      ledger = [] as ProcessedWindow[];
      lifecycle = new AutoScalingProxy(motoEndpoint(), (c) => sim?.complete(c) ?? false);
      await createGroup();
      await new DynamoDBClient({}).send(
        new CreateTableCommand({
          TableName: TABLE,
          BillingMode: "PAY_PER_REQUEST",
          AttributeDefinitions: [{ AttributeName: "window_key", AttributeType: "S" }],
          KeySchema: [{ AttributeName: "window_key", KeyType: "HASH" }],
        }),
      );
    });
    afterEach(async () => {
      await sim?.stop();
      sim = undefined;
      await lifecycle.stop();
      autoscaling.destroy();
      ec2.destroy();
    });

    it("warm pool: a launch the pool can serve starts (warmStartSimMs), the next boots (bootSimMs); an on-demand group's instances are on-demand", async () => {
      // Prepare: an on-demand group (no mixed policy) with a warm pool of one.
      const s = await startSim(1_000, { ...fleet, spot: undefined, warmPoolMinSize: 1 });
      // Act
      await desire(2);
      await until("two instances admitted", () => s.instances().length === 2, 20_000);
      // Assess: at speed 100, a 1 s start is 10 real ms and a 10 s boot is 100 real ms.
      const waits = s.instances().map((r) => r.servingFromMs - r.launchedAtMs);
      expect(waits.filter((ms) => ms < 50)).to.have.length(1);
      expect(waits.filter((ms) => ms >= 90)).to.have.length(1);
      expect(s.instances().map((r) => r.market)).to.deep.equal(["on-demand", "on-demand"]);
      expect(notes.filter((n) => n.includes("from the warm pool"))).to.have.length(1);
    });

    it("failLaunches: what moto launches is held back (not in service, no target, no host), then joins once launches succeed", async () => {
      // Prepare
      const s = await startSim(1_000);
      s.failLaunches("InsufficientInstanceCapacity");
      // Act: the group wants two; moto launches them at once
      await desire(2);
      await until("moto holds both InService", async () => (await inServiceInMoto()) === 2, 20_000);
      await until("a poll has seen them", () => notes.filter((n) => n.includes("failed: InsufficientInstanceCapacity")).length === 2, 5_000);
      const whileFailing = { ...s.snapshot(), admitted: s.instances().length };
      s.failLaunches(undefined);
      await serving(s, 2);
      // Assess: Auto Scaling's metrics counted none in service while launches failed
      expect(whileFailing).to.deep.equal({ desired: 2, inService: 0, healthy: 0, draining: 0, admitted: 0 });
      expect(s.snapshot()).to.deep.include({ desired: 2, inService: 2, healthy: 2 });
      expect(notes.filter((n) => n.includes("failed: InsufficientInstanceCapacity"))).to.have.length(2);
    });

    it("SetDesiredCapacity 2: two instances join, behind the load balancer's route and each one's own", async () => {
      // Prepare
      const s = await startSim(1_000);
      const routesAtStart = { ...routes };
      // Act
      await desire(2);
      await serving(s, 2);
      // Assess
      const records = s.instances();
      const ips = await privateIps(records.map((r) => r.instanceId));
      expect(Object.keys(routesAtStart)).to.deep.equal([`${DNS}:${PORT}`]);
      expect(records).to.have.length(2);
      expect(records.map((r) => r.market)).to.deep.equal(["on-demand", "spot"]);
      expect(records.map((r) => r.instanceType)).to.deep.equal(["g5.xlarge", "g5.xlarge"]);
      expect(Object.keys(routes).sort()).to.deep.equal([`${DNS}:${PORT}`, ...records.map((r) => `${ips[r.instanceId]}:${PORT}`)].sort());
      expect(routes[`${DNS}:${PORT}`]).to.match(/^127\.0\.0\.1:\d+$/);
      expect(s.snapshot()).to.deep.equal({ desired: 2, inService: 2, healthy: 2, draining: 0 });
      for (const r of records) expect(r.servingFromMs - r.launchedAtMs).to.equal(100);
    });

    it("sends POSTs through the load balancer to the instances, least outstanding first, and lists them in received()", async () => {
      // Prepare: 20 simulated seconds a window (200 ms), one slot: two windows at once go to two instances.
      const s = await startSim(20_000);
      await desire(2);
      await serving(s, 2);
      // Act
      const answers = await Promise.all([post({ w: 0 }, "s/0"), post({ w: 1 }, "s/1")]);
      // Assess
      const ids = s.instances().map((r) => r.instanceId);
      const received = s.received();
      expect(answers).to.deep.equal([
        { status: 200, body: { processed: true, key: "s/0" } },
        { status: 200, body: { processed: true, key: "s/1" } },
      ]);
      expect(received.map((w) => w.key).sort()).to.deep.equal(["s/0", "s/1"]);
      expect(received.map((w) => w.instanceId).sort()).to.deep.equal([...ids].sort());
      expect(new Set(ledger.map((w) => w.key)).size).to.equal(ledger.length);
    });

    it("reconciles to desired capacity: an instance protected at the scale-in goes once its protection is lifted (moto acts only inside SetDesiredCapacity)", async () => {
      // Prepare: two instances, both protected (busy when the scaler scaled in).
      const s = await startSim(1_000);
      await desire(2);
      await serving(s, 2);
      const ids = s.instances().map((r) => r.instanceId);
      const protect = (on: boolean) =>
        autoscaling.send(new SetInstanceProtectionCommand({ AutoScalingGroupName: GROUP, InstanceIds: ids, ProtectedFromScaleIn: on }));
      await protect(true);
      await desire(1);
      await new Promise((r) => setTimeout(r, 300));
      const whileProtected = await inServiceInMoto();
      // Act: the scaler lifts protection from idle instances.
      await protect(false);
      await until("one instance left", () => live(s).length === 1, 20_000);
      // Assess
      expect(whileProtected).to.equal(2);
      expect(await inServiceInMoto()).to.equal(1);
      expect(s.instances().filter((r) => r.leftBecause === "scale_in")).to.have.length(1);
    });

    it("SetDesiredCapacity 0: the instances leave (scale_in), the load balancer stops routing (503), only its route stays", async () => {
      // Prepare
      const s = await startSim(1_000);
      await desire(2);
      await serving(s, 2);
      const before = await post({ w: 0 }, "s/0");
      // Act
      await desire(0);
      await until("both instances gone", () => live(s).length === 0 && s.snapshot().draining === 0, 20_000);
      const after = await post({ w: 1 }, "s/1");
      // Assess
      expect(before).to.have.property("status", 200);
      expect(after).to.have.property("status", 503);
      expect(s.lb.refusedRequests()).to.equal(1);
      expect(s.received().map((w) => w.key)).to.deep.equal(["s/0"]);
      for (const r of s.instances()) {
        expect(r.leftBecause).to.equal("scale_in");
        expect(r.goneAtMs).to.be.a("number").and.at.least(r.launchedAtMs);
        expect(r.cutOff).to.equal(0);
        expect(r.drainedByGateway).to.equal(true);
        expect(s.lb.health(r.instanceId)).to.equal(undefined);
      }
      expect(Object.keys(routes)).to.deep.equal([`${DNS}:${PORT}`]);
      expect(s.snapshot()).to.deep.equal({ desired: 0, inService: 0, healthy: 0, draining: 0 });
    });

    it("interrupt(notice) takes a Spot instance out, moto launches its replacement, and an on-demand one cannot be interrupted", async () => {
      // Prepare
      const s = await startSim(1_000);
      await desire(2);
      await serving(s, 2);
      const [onDemand, spotted] = s.instances();
      const spotId = s.spotInService();
      const replacement = () => s.instances().find((r) => r.instanceId !== onDemand.instanceId && r.instanceId !== spotted.instanceId);
      // Act
      await s.interrupt(spotted.instanceId, "notice");
      await until(
        "the replacement serving and the interrupted one gone",
        () => s.instances().find((r) => r.instanceId === spotted.instanceId)?.goneAtMs !== null && replacement() !== undefined && s.snapshot().healthy === 2,
        20_000,
      );
      const refused = await s.interrupt(onDemand.instanceId, "notice").then(
        () => "no error",
        (err: Error) => err.message,
      );
      // Assess
      const gone = s.instances().find((r) => r.instanceId === spotted.instanceId);
      expect(spotId).to.equal(spotted.instanceId);
      expect(gone).to.deep.include({ leftBecause: "interrupted", cutOff: 0, drainedByGateway: true });
      expect(gone?.goneAtMs).to.be.a("number");
      expect(replacement()).to.deep.include({ market: "spot", leftBecause: null, goneAtMs: null });
      expect(await inServiceInMoto()).to.equal(2);
      expect(s.snapshot()).to.deep.include({ desired: 2, inService: 2, draining: 0 });
      expect(refused).to.match(/is on-demand; EC2 interrupts only Spot instances/);
      expect(s.lb.health(onDemand.instanceId)).to.equal("healthy");
      expect(s.lb.health(spotted.instanceId)).to.equal(undefined);
      expect(notes.some((n) => n.includes(`spot interruption notice for ${spotted.instanceId}`))).to.equal(true);
    });

    it("launches by the group's distribution as it is now, and replaces the Spot instance it no longer wants, then back", async () => {
      // Prepare: one on-demand base, Spot above it, as the program declares
      let now = spot(1, 0);
      const s = await startSim(1_000, fleet, { distribution: () => now });
      await desire(2);
      await serving(s, 2);
      const [base, spotted] = s.instances();
      // Act: the breaker's 100 %, and a scale-out while it holds
      now = spot(1, 100);
      await desire(3);
      await until("the Spot instance replaced by an on-demand one", () => live(s).length === 3 && live(s).every((r) => r.market === "on-demand"), 20_000);
      await serving(s, 3);
      const whileOnDemand = s.instances().map((r) => `${r.market}:${r.leftBecause ?? "in"}`);
      // Act: the configured mix again
      now = spot(1, 0);
      await until(
        "back to one on-demand base and Spot above it",
        () => live(s).filter((r) => r.market === "spot").length === 2 && s.snapshot().healthy === 3,
        30_000,
      );
      // Assess
      expect(whileOnDemand).to.deep.equal(["on-demand:in", "spot:rebalanced", "on-demand:in", "on-demand:in"]);
      expect(s.instances().find((r) => r.instanceId === spotted!.instanceId)).to.deep.include({ leftBecause: "rebalanced", cutOff: 0, drainedByGateway: true });
      expect(live(s).map((r) => r.instanceId)).to.include(base!.instanceId);
      expect(s.snapshot()).to.deep.include({ desired: 3, inService: 3 });
    });

    it("interrupt puts EC2's event on the default bus, stamped with the simulated time, which the program's rule delivers", async () => {
      // Prepare: the program's rule and its queue target, in moto; two Spot instances above the base
      const [events, sqs] = [new EventBridgeClient({}), new SQSClient({})];
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "gpu-scaler" }));
      const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }))).Attributes?.QueueArn;
      await events.send(new PutRuleCommand({ Name: "spot-signals", EventPattern: JSON.stringify(spotSignalPattern()) }));
      await events.send(new PutTargetsCommand({ Rule: "spot-signals", Targets: [{ Id: "scaler", Arn: arn }] }));
      const clock = new SimClock(100);
      const s = await startSim(1_000, fleet, { clock, signals: { events, account: "123456789012", region: "us-east-1" } });
      await desire(3);
      await serving(s, 3);
      const [, first, second] = s.instances().map((r) => r.instanceId);
      const before = clock.now();
      // Act
      await s.interrupt(first!, "notice");
      await s.interrupt(second!, "rebalance");
      const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      // Assess
      const signals = (got.Messages ?? []).flatMap((m) => {
        const read = spotSignalOf(m.Body ?? "");
        return read && "signal" in read ? [read.signal] : [];
      });
      expect(signals.map(({ time: _time, ...rest }) => rest)).to.have.deep.members([
        { kind: "interruption", instanceId: first, action: "terminate" },
        { kind: "rebalance", instanceId: second },
      ]);
      // The simulated clock (100 times real time), as moto writes it: to the second.
      for (const { time } of signals) expect(Date.parse(time)).to.be.within(Math.floor(before / 1000) * 1000, clock.now());
      // Out of the group, each still carries the group's tag, as Auto Scaling leaves it (moto's detach drops it).
      const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [first!, second!] }));
      const groupTags = (out.Reservations ?? [])
        .flatMap((r) => r.Instances ?? [])
        .map((i) => i.Tags?.find((t) => t.Key === "aws:autoscaling:groupName")?.Value);
      expect(groupTags).to.deep.equal([GROUP, GROUP]);
      events.destroy();
      sqs.destroy();
    });

    it("admits moto's replacement for an interrupted instance once (one record, one service, one note)", async () => {
      // Prepare: EC2 answers DescribeInstances in 150 ms (a slow API), so the scheduled poll and the
      // interrupt's own poll overlap every time rather than now and then.
      ec2.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName === "DescribeInstancesCommand") await new Promise((r) => setTimeout(r, 150));
          return next(args);
        },
        { step: "initialize" },
      );
      const s = await startSim(1_000);
      await desire(2);
      await serving(s, 2);
      const [, spotted] = s.instances();
      // Act
      await s.interrupt(spotted.instanceId, "notice");
      await until("three records and two serving", () => s.instances().length >= 3 && s.snapshot().healthy === 2, 20_000);
      await until("a few more polls", () => notes.filter((n) => n.includes("gone")).length === 1);
      await new Promise((r) => setTimeout(r, 300)); // ten polls' time, for a late duplicate to show
      // Assess
      const ids = s.instances().map((r) => r.instanceId);
      expect(ids).to.have.length(3);
      expect(new Set(ids).size).to.equal(3);
      expect(notes.filter((n) => n.includes(" joined ")).length).to.equal(3);
    });

    it("a leaving instance finishes the windows it holds when they complete within the drain (cutOff 0)", async () => {
      // Prepare: a 30 s window (300 ms), well inside the 300 s hook.
      const s = await startSim(30_000);
      await desire(1);
      await serving(s, 1);
      const [only] = s.instances();
      const pending = post({ w: 0 }, "s/0");
      await until("the window in flight", () => s.lb.outstanding(only.instanceId) === 1);
      // Act
      await desire(0);
      await until("the instance to leave the load balancer", () => s.lb.health(only.instanceId) === "draining");
      const duringDrain = await post({ w: 1 }, "s/1");
      const answer = await pending;
      await until("the instance gone", () => s.instances()[0].goneAtMs !== null, 20_000);
      // Assess
      const record = s.instances()[0];
      const [window] = s.received();
      expect(duringDrain).to.have.property("status", 503);
      expect(answer).to.deep.equal({ status: 200, body: { processed: true, key: "s/0" } });
      expect(record).to.deep.include({ leftBecause: "scale_in", cutOff: 0, drainedByGateway: true });
      expect(s.received().map((w) => w.key)).to.deep.equal(["s/0"]);
      expect(record.goneAtMs).to.be.at.least(window.atMs);
    });

    it("a Spot notice cuts off a window that outlasts the drain: 502 to the caller, cutOff 1, not processed", async () => {
      // Prepare: a 300 s window (3 s) against the notice's two minutes (1.2 s).
      const s = await startSim(300_000);
      await desire(2);
      await serving(s, 2);
      const spotId = s.spotInService() ?? "";
      // Occupy the on-demand one first (ties go to it), so the next window lands on the Spot one.
      const onOnDemand = post({ w: 0 }, "s/0");
      await until("the first window in flight", () => s.instances().some((r) => s.lb.outstanding(r.instanceId) === 1));
      const onSpot = post({ w: 1 }, "s/1");
      await until("the second window on the Spot instance", () => s.lb.outstanding(spotId) === 1);
      // Act
      await s.interrupt(spotId, "notice");
      const cut = await onSpot;
      await until("the interrupted instance gone", () => s.instances().find((r) => r.instanceId === spotId)?.goneAtMs !== null, 20_000);
      // Assess
      const record = s.instances().find((r) => r.instanceId === spotId);
      expect(cut).to.have.property("status", 502);
      expect(record).to.deep.include({ leftBecause: "interrupted", cutOff: 1 });
      expect(s.received().map((w) => w.key)).to.not.include("s/1");
      expect(record?.drainedByGateway).to.equal(false);
      expect(await onOnDemand).to.deep.equal({ status: 200, body: { processed: true, key: "s/0" } });
    });
  });
});
