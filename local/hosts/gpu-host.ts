/**
 * What runs on a local GPU instance: the real gateway bundle (functions/gpu/gateway.ts, the esbuild
 * output the image ships) as a child process, in front of a fake model server (./fake-model.ts),
 * with the instance's own metadata service (../aws/instance-metadata.ts). The gateway's environment
 * is the program's: the `write_files` entry at GATEWAY_ENV_FILE in the instance's recorded user
 * data, with only addresses replaced (its port, the model's URL, AWS's endpoints and the metadata
 * service's) and its drain poll put on the platform's clock, as the worker's timers are.
 * - `GpuHost`: one instance's processes (the fleet stand-in has one per instance, local/hosts/gpu-fleet.ts).
 * - `GpuInstanceHost`: the dev instance: the processes run while moto shows it `running`, after the boot delay.
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as path from "node:path";
import { DescribeInstancesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import { parse as parseYaml } from "yaml";
import { bundleFunction } from "../../infra/bundle";
import { GATEWAY_ENV_FILE } from "../../functions/gpu/env";
import { InstanceMetadata } from "../aws/instance-metadata";
import { readBody } from "../aws/intercepting-proxy";
import { LoopbackServer, replyJson } from "./loopback";
import { FakeModel, type ModelLedger, type ProcessedWindow } from "./fake-model";

export const GATEWAY_ENTRY = "functions/gpu/gateway.ts";

/** Pure: the gateway's environment from `#cloud-config` user data (its GATEWAY_ENV_FILE entry), else undefined. */
export function gatewayEnvFromUserData(userData: string | undefined): Record<string, string> | undefined {
  if (!userData?.startsWith("#cloud-config")) return undefined;
  const doc = parseYaml(userData) as { write_files?: Array<{ path?: string; content?: string; encoding?: string }> } | null;
  const entry = doc?.write_files?.find((f) => f.path === GATEWAY_ENV_FILE);
  if (typeof entry?.content !== "string") return undefined;
  const text = /^(b64|base64)$/.test(entry.encoding ?? "") ? Buffer.from(entry.content, "base64").toString("utf8") : entry.content;
  const env: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m?.[1] !== undefined) env[m[1]] = m[2] ?? "";
  }
  return env;
}

/** Writes the gateway bundle (the same esbuild output the image carries) to `dir`; returns its path. */
export function writeGatewayBundle(dir: string): string {
  const file = path.join(dir, "gpu-gateway.js");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(file, bundleFunction(GATEWAY_ENTRY).code);
  return file;
}

/** A free loopback port (the gateway listens on the port it is given, as on the instance). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface GpuHostOptions {
  instanceId: string;
  bundlePath: string;
  logDir: string;
  /** The program's gateway environment (gatewayEnvFromUserData). */
  programEnv: Record<string, string>;
  /** Where the gateway reaches AWS: moto, and the lifecycle-action proxy for Auto Scaling. */
  awsEnv: Record<string, string>;
  speed: number;
  model: { windowRealMs: number; slots: number; ledger: ModelLedger };
  /** SIGKILL after this long after a SIGTERM. @default 5000 */
  graceMs?: number;
}

const alive = new Set<ChildProcess>();
let exitHook = false;

/** One GPU instance's gateway process, fake model and metadata service. */
export class GpuHost {
  readonly imds: InstanceMetadata;
  private model?: FakeModel;
  private child?: ChildProcess;
  private exited: Promise<void> = Promise.resolve();

  /**
   * Where the Lambdas reach the instance: the gateway, with its status's `idleSeconds` put on the
   * platform's clock (the gateway keeps real time, its leases must; the scaler and the idle check
   * compare idleness with their simulated clock), as ../aws/ec2-clock.ts does for launch times.
   */
  private readonly front = new LoopbackServer((req, res) => this.forward(req, res));
  lambdaPort = 0;

  private constructor(
    private readonly o: GpuHostOptions,
    /** The gateway's port, kept across restarts: the Lambdas' route to the instance stays put. */
    readonly port: number,
  ) {
    this.imds = new InstanceMetadata(o.instanceId);
  }

  static async create(o: GpuHostOptions): Promise<GpuHost> {
    const host = new GpuHost(o, await freePort());
    host.lambdaPort = (await host.front.start()).port;
    return host;
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const status = req.method === "GET" && req.url === this.o.programEnv.GPU_STATUS_PATH;
    const upstream = http.request({ host: "127.0.0.1", port: this.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      if (!status) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      readBody(answer).then((body) => {
        const doc = JSON.parse(body.toString("utf8")) as { idleSeconds?: number };
        if (typeof doc.idleSeconds === "number") doc.idleSeconds *= this.o.speed;
        replyJson(res, answer.statusCode ?? 502, doc);
      }, () => res.destroy());
    });
    // Not up (booting, stopped, gone): the connection drops, as to a host whose port is closed.
    upstream.on("error", () => req.socket.destroy());
    req.pipe(upstream);
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Windows at the model now (worked on or waiting for a slot). */
  outstanding(): number {
    return this.model?.outstanding() ?? 0;
  }

  /** Boots the instance's services: the metadata service, the model, then the gateway. */
  async start(): Promise<void> {
    if (this.child) return;
    const { o } = this;
    const imdsUrl = await this.imds.start();
    const model = new FakeModel({
      instanceId: o.instanceId,
      path: o.programEnv.GPU_MODEL_PATH ?? "/",
      healthPath: o.programEnv.GPU_MODEL_HEALTH_PATH ?? "/health",
      ...o.model,
    });
    this.model = model;
    const modelUrl = await model.start();
    const poll = Number(o.programEnv.GPU_DRAIN_POLL_SECONDS ?? 5);
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...o.programEnv,
      ...o.awsEnv,
      GPU_SERVICE_PORT: String(this.port),
      GPU_MODEL_URL: modelUrl,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imdsUrl,
      // A poll interval, not a bound: on the platform's clock (never below 1 s), as the worker's timers are.
      GPU_DRAIN_POLL_SECONDS: String(Math.max(1, Math.ceil(poll / o.speed))),
    };
    fs.mkdirSync(o.logDir, { recursive: true });
    const fd = fs.openSync(path.join(o.logDir, `gpu-gateway-${o.instanceId}.log`), "a");
    const child = spawn(process.execPath, [o.bundlePath], { env, stdio: ["ignore", fd, fd] });
    fs.closeSync(fd);
    this.child = child;
    alive.add(child);
    if (!exitHook) {
      exitHook = true;
      process.once("exit", () => {
        for (const c of alive) c.kill("SIGKILL");
      });
    }
    this.exited = new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.once("error", () => resolve());
    }).then(() => {
      alive.delete(child);
    });
  }

  /** The instance stops or terminates: SIGTERM (the gateway drains and exits), SIGKILL after the grace; then the rest. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(true), this.o.graceMs ?? 5_000)));
      if (await Promise.race([this.exited.then(() => false), late])) child.kill("SIGKILL");
      clearTimeout(timer);
      await this.exited;
    }
    await this.teardown();
  }

  /** The instance is gone at once (reclaimed, or its hook timed out): SIGKILL, whatever it holds. */
  async kill(): Promise<void> {
    await this.front.close();
    this.child?.kill("SIGKILL");
    await this.exited;
    await this.teardown();
  }

  private async teardown(): Promise<void> {
    this.child = undefined;
    await this.model?.kill();
    this.model = undefined;
    await this.imds.stop();
  }
}

/** The dev instance's state as the host last saw it in moto. */
export interface GpuServiceState {
  instanceState: string;
  serving: boolean;
  /** When the instance was first seen running, since its last start (null while not running). */
  runningSinceMs: number | null;
  /** When its gateway started: runningSince + boot delay (null while not serving). */
  servingSinceMs: number | null;
  /** Transitions into `running` seen so far, the first observation included. */
  starts: number;
}

/** The dev instance: its processes run while moto shows it `running`, from the boot delay on. */
export class GpuInstanceHost {
  private state_: GpuServiceState = { instanceState: "unknown", serving: false, runningSinceMs: null, servingSinceMs: null, starts: 0 };
  private timer?: NodeJS.Timeout;
  private polling: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly o: { ec2: EC2Client; host: GpuHost; bootDelayMs: number; ledger: ModelLedger; pollMs?: number }) {}

  get port(): number {
    return this.o.host.port;
  }

  get lambdaPort(): number {
    return this.o.host.lambdaPort;
  }

  async start(): Promise<void> {
    await this.poll();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.polling;
    await this.o.host.kill();
  }

  state(): GpuServiceState {
    return { ...this.state_ };
  }

  /** JSON bodies of the windows the model processed, in order. */
  received(): unknown[] {
    return this.o.ledger.processed.map((w) => w.body);
  }

  receivedAt(): Array<{ body: unknown; atMs: number }> {
    return this.o.ledger.processed.map((w: ProcessedWindow) => ({ body: w.body, atMs: w.atMs }));
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll().finally(() => this.schedule());
    }, this.o.pollMs ?? 200);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    let name: string | undefined;
    try {
      const out = await this.o.ec2.send(new DescribeInstancesCommand({ InstanceIds: [this.o.host.imds.instanceId] }));
      name = out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
    } catch (err) {
      // A missing instance is a host that will never answer; moto briefly unreachable keeps the last state.
      if ((err as { name?: string }).name !== "InvalidInstanceID.NotFound") return;
      name = "terminated";
    }
    const s = this.state_;
    const now = Date.now();
    if (name === "running" && s.instanceState !== "running") {
      // moto starts instances at once (`pending` is never seen): the boot starts when `running` is first seen.
      s.runningSinceMs = now;
      s.starts += 1;
    }
    s.instanceState = name ?? "unknown";
    if (name !== "running") {
      s.runningSinceMs = null;
      s.servingSinceMs = null;
      s.serving = false;
      if (this.o.host.running) await this.o.host.stop();
    } else if (!s.serving && s.runningSinceMs !== null && now >= s.runningSinceMs + this.o.bootDelayMs && !this.stopped) {
      await this.o.host.start();
      s.serving = true;
      s.servingSinceMs = s.runningSinceMs + this.o.bootDelayMs;
    }
  }
}

/** Pure over the files: how many times each `step` appears in the gateways' logs (`gpu-gateway-*.log` in `logDir`). */
export function gatewaySteps(logDir: string): Record<string, number> {
  const counts: Record<string, number> = {};
  const files = fs.existsSync(logDir) ? fs.readdirSync(logDir).filter((f) => /^gpu-gateway-.*\.log$/.test(f)) : [];
  for (const file of files) {
    for (const line of fs.readFileSync(path.join(logDir, file), "utf8").split("\n")) {
      const step = /"step":"([a-z_]+)"/.exec(line)?.[1];
      if (step) counts[step] = (counts[step] ?? 0) + 1;
    }
  }
  return counts;
}
