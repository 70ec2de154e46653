import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { expect } from "chai";
import { GATEWAY_ENV } from "../../functions/gpu/env";
import { bundleFunction } from "../../infra/bundle";
import { freeLoopbackPort, motoClientEnv } from "../../local/aws/moto";
import { FakeModel } from "../functions/helpers/fake-model";
import { motoEndpoint, resetMoto } from "./helpers/moto";

type LogLine = Record<string, unknown> & { step?: string };

const TABLE = "encache-gpu-keys-proc";

/** Real-time polling (this suite runs real processes): until `check` holds or `ms` pass. */
async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The gateway as it runs on an instance: the esbuild bundle of functions/gpu/gateway.ts in its own
 * Node process, its environment exactly GATEWAY_ENV's encoding (what the user data writes) plus the
 * addresses, in front of a fake model, its instance metadata a local IMDSv2, its key table in moto.
 */
describe("gpu gateway process: the bundle serves, drains on a metadata signal and exits 0 on SIGTERM", function () {
  this.timeout(60_000);
  const model = new FakeModel();
  let imds: Server;
  let imdsUrl: string;
  /** What the local IMDS answers for `autoscaling/target-lifecycle-state`. */
  let targetState = "InService";
  let dir: string;
  let child: ChildProcess | undefined;
  let lines: LogLine[];
  let port: number;

  before(async () => {
    imds = createServer((req, res) => {
      if (req.method === "PUT" && req.url === "/latest/api/token") return void res.writeHead(200).end("local-token");
      if (req.headers["x-aws-ec2-metadata-token"] !== "local-token") return void res.writeHead(401).end();
      if (req.url === "/latest/meta-data/instance-id") return void res.writeHead(200).end("i-0process000000001");
      if (req.url === "/latest/meta-data/autoscaling/target-lifecycle-state") return void res.writeHead(200).end(targetState);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => imds.listen(0, "127.0.0.1", r));
    imdsUrl = `http://127.0.0.1:${(imds.address() as AddressInfo).port}`;
  });
  after(async () => {
    imds.closeAllConnections();
    await new Promise<void>((r) => imds.close(() => r()));
  });

  beforeEach(async () => {
    await resetMoto();
    await new DynamoDBClient({}).send(
      new CreateTableCommand({
        TableName: TABLE,
        BillingMode: "PAY_PER_REQUEST",
        KeySchema: [{ AttributeName: "window_key", KeyType: "HASH" }],
        AttributeDefinitions: [{ AttributeName: "window_key", AttributeType: "S" }],
      }),
    );
    model.requests.length = 0;
    await model.start();
    targetState = "InService";
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-gateway-proc-"));
    lines = [];
    port = await freeLoopbackPort();
    const script = path.join(dir, "gateway.js");
    fs.writeFileSync(script, bundleFunction("functions/gpu/gateway.ts").code);
    const env = GATEWAY_ENV.encode({
      servicePort: port,
      servicePath: "/windows",
      statusPath: "/status",
      modelUrl: model.url,
      modelPath: "/infer",
      modelHealthPath: "/health",
      modelConcurrency: 2,
      modelTimeoutMs: 10_000,
      keysTable: TABLE,
      keyLeaseSeconds: 60,
      drainPollSeconds: 1,
    });
    child = spawn(process.execPath, [script], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH, ...motoClientEnv(motoEndpoint(), "us-east-1"), AWS_EC2_METADATA_SERVICE_ENDPOINT: imdsUrl, ...env },
    });
    let buffered = "";
    child.stdout?.on("data", (c: Buffer) => {
      buffered += c.toString();
      const parts = buffered.split("\n");
      buffered = parts.pop() ?? "";
      for (const p of parts) if (p.startsWith("{")) lines.push(JSON.parse(p) as LogLine);
    });
    await eventually(() => lines.some((l) => l.step === "gateway_started"), 20_000, "gateway_started");
  });

  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    child = undefined;
    await model.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const post = (key: string) =>
    fetch(`http://127.0.0.1:${port}/windows`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body: "{}" });
  const status = () => fetch(`http://127.0.0.1:${port}/status`).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));
  const exited = () => new Promise<number | null>((r) => (child!.exitCode !== null ? r(child!.exitCode) : child!.once("exit", (code) => r(code))));

  it("SIGTERM with a window at the model: 503 to new windows, the held one answered, then exit 0", async () => {
    expect((await status()).status).to.equal(200);
    model.gate();
    const held = post("held");
    await eventually(() => model.requests.length === 1, 10_000, "the window at the model");
    child!.kill("SIGTERM");
    await eventually(() => lines.some((l) => l.step === "drain_started"), 10_000, "drain_started");
    expect((await post("late")).status).to.equal(503);
    expect(await status()).to.deep.include({ status: 503 });
    expect(child!.exitCode).to.equal(null);
    model.open();
    expect((await held).status).to.equal(200);
    expect(await exited()).to.equal(0);
    const steps = lines.map((l) => l.step);
    expect(steps.indexOf("window_done")).to.be.below(steps.indexOf("drain_done"));
    expect(lines.find((l) => l.step === "window_claimed")).to.deep.include({ key: "held" });
  });

  it("the target lifecycle state Terminated in the metadata drains it (status 503, draining); SIGTERM then exits 0", async () => {
    targetState = "Terminated";
    await eventually(() => lines.some((l) => l.step === "drain_started"), 10_000, "drain_started");
    expect(lines.find((l) => l.step === "drain_started")).to.deep.include({ reason: "target-lifecycle-terminated" });
    const s = await status();
    expect(s).to.deep.include({ status: 503 });
    expect(s.body).to.deep.include({ active: 0, draining: true });
    child!.kill("SIGTERM");
    expect(await exited()).to.equal(0);
  });
});
