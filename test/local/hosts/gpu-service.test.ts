import { DescribeImagesCommand, EC2Client, RunInstancesCommand, StartInstancesCommand, StopInstancesCommand } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import { GpuServiceSimulator } from "../../../local/hosts/gpu-service";
import { resetMoto } from "../../integration/helpers/moto";

const PATH = "/v1/windows";
const BOOT_MS = 30_000;

async function waitFor(what: string, condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("local runtime: GPU service simulator", () => {
  let ec2: EC2Client;
  let instanceId: string;
  let gpu: GpuServiceSimulator;
  let base: string;
  // A hand-driven clock: the boot delay passes when the test says so, not after real seconds.
  let clock: number;

  async function launch(): Promise<string> {
    const { Images } = await ec2.send(new DescribeImagesCommand({ Owners: ["amazon"] }));
    const out = await ec2.send(new RunInstancesCommand({ ImageId: Images![0].ImageId!, InstanceType: "g5.xlarge", MinCount: 1, MaxCount: 1 }));
    return out.Instances![0].InstanceId!;
  }
  async function startSimulator(id: string): Promise<void> {
    gpu = new GpuServiceSimulator({ ec2, instanceId: id, path: PATH, bootDelayMs: BOOT_MS, pollMs: 20, now: () => clock });
    const { host, port } = await gpu.start();
    base = `http://${host}:${port}`;
  }
  function post(body: string, path = PATH): Promise<Response> {
    return fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
  }
  /** What the ingest window function sees: a reply's status, or the fetch failure. */
  async function outcome(body: string, path = PATH): Promise<number | string> {
    try {
      const res = await post(body, path);
      await res.text();
      return res.status;
    } catch (err) {
      return `${(err as Error).name}: ${(err as Error).message}`;
    }
  }
  async function startInstance(): Promise<void> {
    await ec2.send(new StartInstancesCommand({ InstanceIds: [instanceId] }));
    await waitFor("the simulator to see running", () => gpu.state().instanceState === "running");
  }
  async function stopInstance(): Promise<void> {
    await ec2.send(new StopInstancesCommand({ InstanceIds: [instanceId] }));
    await waitFor("the simulator to see stopped", () => gpu.state().instanceState === "stopped");
  }

  beforeEach(async () => {
    await resetMoto();
    ec2 = new EC2Client({});
    clock = 1_000_000;
    instanceId = await launch();
    await ec2.send(new StopInstancesCommand({ InstanceIds: [instanceId] }));
    await startSimulator(instanceId);
  });
  afterEach(async () => {
    await gpu.stop();
    ec2.destroy();
  });

  it("refuses while the instance is stopped: fetch rejects as for an unreachable host", async () => {
    const result = await outcome('{"window":1}');

    expect(result).to.equal("TypeError: fetch failed");
    expect(gpu.state()).to.deep.include({ instanceState: "stopped", serving: false, runningSinceMs: null, starts: 0 });
    expect(gpu.received()).to.deep.equal([]);
  });

  it("after StartInstances, refuses during the boot delay, then accepts and records the POSTs in order", async () => {
    await startInstance();
    const whileBooting = await outcome('{"window":0}');

    clock += BOOT_MS;
    const first = await outcome('{"window":1}');
    const second = await outcome('{"window":2}');

    expect(whileBooting).to.equal("TypeError: fetch failed");
    expect([first, second]).to.deep.equal([200, 200]);
    expect(gpu.received()).to.deep.equal([{ window: 1 }, { window: 2 }]);
    expect(gpu.state()).to.deep.equal({
      instanceState: "running",
      serving: true,
      runningSinceMs: 1_000_000,
      servingSinceMs: 1_000_000 + BOOT_MS,
      starts: 1,
    });
  });

  it("records when each accepted window arrived, so drain timings need no polling", async () => {
    // Prepare
    await startInstance();
    clock += BOOT_MS;
    // Act
    await outcome('{"window":1}');
    clock += 1_500;
    await outcome('{"window":2}');
    // Assess
    expect(gpu.receivedAt()).to.deep.equal([
      { body: { window: 1 }, atMs: 1_000_000 + BOOT_MS },
      { body: { window: 2 }, atMs: 1_000_000 + BOOT_MS + 1_500 },
    ]);
  });

  it("processes each Idempotency-Key once: a repeat is answered 200 and counted, not processed again", async () => {
    // Prepare
    await startInstance();
    clock += BOOT_MS;
    const send = (key: string, body: string) =>
      fetch(`${base}${PATH}`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body });
    // Act
    const first = await send("s1/0", '{"window":0}');
    const repeat = await send("s1/0", '{"window":0}');
    const other = await send("s1/1", '{"window":1}');
    // Assess
    expect([first.status, repeat.status, other.status]).to.deep.equal([200, 200, 200]);
    expect(await repeat.json()).to.deep.equal({ accepted: true, repeat: true });
    expect(gpu.received()).to.deep.equal([{ window: 0 }, { window: 1 }]);
    expect(gpu.repeatedDeliveries()).to.equal(1);
  });

  it("refuses again once the instance is stopped", async () => {
    await startInstance();
    clock += BOOT_MS;
    expect(await outcome('{"window":1}')).to.equal(200);

    await stopInstance();

    expect(await outcome('{"window":2}')).to.equal("TypeError: fetch failed");
    expect(gpu.state()).to.deep.include({ serving: false, runningSinceMs: null, servingSinceMs: null });
    expect(gpu.received()).to.deep.equal([{ window: 1 }]);
  });

  it("a stop→start cycle restarts the boot clock and counts a second start", async () => {
    await startInstance();
    clock += BOOT_MS;
    await stopInstance();
    clock += 5_000;

    await startInstance();
    const rebooting = await outcome('{"window":1}');
    clock += BOOT_MS;
    const booted = await outcome('{"window":2}');

    expect(rebooting).to.equal("TypeError: fetch failed");
    expect(booted).to.equal(200);
    expect(gpu.state()).to.deep.include({ starts: 2, runningSinceMs: 1_000_000 + BOOT_MS + 5_000 });
  });

  describe("while serving", () => {
    beforeEach(async () => {
      await startInstance();
      clock += BOOT_MS;
    });

    const cases: Array<[string, () => Promise<Response>, number]> = [
      ["a POST to another path → 404", () => post("{}", "/elsewhere"), 404],
      ["a GET of the path → 404", () => fetch(`${base}${PATH}`), 404],
      ["a body that is not JSON → 400", () => post("{not json"), 400],
    ];
    for (const [name, send, status] of cases) {
      it(`answers ${name}, and records nothing`, async () => {
        const res = await send();
        await res.text();

        expect(res.status).to.equal(status);
        expect(gpu.received()).to.deep.equal([]);
      });
    }
  });

  it("treats an instance moto does not know as terminated, and refuses", async () => {
    await gpu.stop();

    await startSimulator("i-0123456789abcdef0");

    expect(gpu.state().instanceState).to.equal("terminated");
    expect(await outcome("{}")).to.equal("TypeError: fetch failed");
  });
});
