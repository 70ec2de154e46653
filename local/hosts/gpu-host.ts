/**
 * What runs on a local GPU instance (`GpuHost`; the fleet stand-in keeps one per instance): the real
 * gateway bundle as a child process, in front of a fake model (./fake-model.ts), with its own metadata
 * service (../aws/instance-metadata.ts). Its environment is the program's (the GATEWAY_ENV_FILE entry of
 * the recorded user data) with only addresses replaced and its drain poll on the platform's clock, as
 * the worker's timers are. `GpuInstanceHost`: the dev instance, run while moto shows it `running`.
 */
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { DescribeInstancesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import { parse as parseYaml } from "yaml";
import { bundleFunction } from "../../infra/bundle";
import { GATEWAY_ENV_FILE } from "../../functions/gpu/env";
import { InstanceMetadata } from "../aws/instance-metadata";
import { readBody } from "../aws/intercepting-proxy";
import { freeLoopbackPort } from "../aws/moto";
import { isAlive, type LoggedChild, spawnLogged, terminate } from "./child";
import { everyUntil } from "./clock";
import { FakeModel, type ProcessedWindow } from "./fake-model";
import { LoopbackServer, replyJson } from "../aws/loopback";

/** Pure: the gateway's environment from `#cloud-config` user data (its GATEWAY_ENV_FILE entry), else undefined. */
export function gatewayEnvFromUserData(userData: string | undefined): Record<string, string> | undefined {
  if (!userData?.startsWith("#cloud-config")) return undefined;
  const doc = parseYaml(userData) as { write_files?: Array<{ path?: string; content?: string; encoding?: string }> } | null;
  const entry = doc?.write_files?.find((f) => f.path === GATEWAY_ENV_FILE);
  if (typeof entry?.content !== "string") return undefined;
  const text = /^(b64|base64)$/.test(entry.encoding ?? "") ? Buffer.from(entry.content, "base64").toString("utf8") : entry.content;
  const pairs = text.split("\n").map((line) => /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim()));
  return Object.fromEntries(pairs.filter((m) => m !== null).map((m) => [m[1], m[2]]));
}

/** Writes the gateway bundle (the same esbuild output the image carries) to `dir`; returns its path. */
export function writeGatewayBundle(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "gpu-gateway.js");
  fs.writeFileSync(file, bundleFunction("functions/gpu/gateway.ts").code);
  return file;
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
  model: { windowRealMs: number; slots: number; ledger: ProcessedWindow[] };
  /**
   * A gateway that dies on its own (SIGKILL, a crash) is started again after this many real ms, as
   * the instance's service manager restarts it; the model and metadata service stay up. Undefined:
   * not restarted.
   */
  restartAfterMs?: number;
}

/** One GPU instance's gateway process, fake model and metadata service. */
export class GpuHost {
  readonly imds: InstanceMetadata;
  private model?: FakeModel;
  private gateway?: LoggedChild;
  /** Set while stop() or kill() ends the gateway: such an exit is not restarted. */
  private ending = false;
  private restartTimer?: NodeJS.Timeout;
  private restartCount = 0;
  /** Where the running gateway's lines start in its log file (a restart appends to the same file). */
  logOffset = 0;
  /**
   * Where the Lambdas reach the instance (`lambdaPort`): the gateway, with its status's `idleSeconds`
   * put on the platform's clock (the gateway keeps real time, as its leases must; the scaler and the
   * idle check compare idleness with their simulated clock), as ../aws/ec2-clock.ts does for launch times.
   */
  private readonly front = new LoopbackServer((req, res) => this.forward(req, res));
  lambdaPort = 0;

  private constructor(
    private readonly o: GpuHostOptions,
    /** The gateway's port, kept across restarts. */
    readonly port: number,
  ) {
    this.imds = new InstanceMetadata(o.instanceId);
  }

  static async create(o: GpuHostOptions): Promise<GpuHost> {
    const host = new GpuHost(o, await freeLoopbackPort());
    host.lambdaPort = (await host.front.start()).port;
    return host;
  }

  readonly running = (): boolean => this.gateway !== undefined;

  /** Windows at the model now (worked on or waiting for a slot). */
  readonly outstanding = (): number => this.model?.outstanding() ?? 0;

  /** Boots the instance's services: the metadata service, the model, then the gateway. */
  async start(): Promise<void> {
    if (this.gateway) return;
    const { o } = this;
    const imds = await this.imds.start();
    const env = o.programEnv;
    this.model = new FakeModel({ instanceId: o.instanceId, path: env.GPU_MODEL_PATH ?? "/", healthPath: env.GPU_MODEL_HEALTH_PATH ?? "/", ...o.model });
    const model = await this.model.start();
    const poll = Math.max(1, Math.ceil(Number(env.GPU_DRAIN_POLL_SECONDS ?? 5) / o.speed));
    const overrides = {
      GPU_SERVICE_PORT: String(this.port),
      GPU_MODEL_URL: model,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imds,
      GPU_DRAIN_POLL_SECONDS: String(poll),
    };
    this.ending = false;
    this.spawnGateway(overrides);
  }

  /** The gateway process's id while it runs. */
  pid(): number | undefined {
    const child = this.gateway?.child;
    return child && isAlive(child) ? child.pid : undefined;
  }

  /** The gateway's log file. */
  logFile(): string {
    return path.join(this.o.logDir, `gpu-gateway-${this.o.instanceId}.log`);
  }

  /** Gateways restarted after dying on their own. */
  restarts(): number {
    return this.restartCount;
  }

  private spawnGateway(overrides: Record<string, string>): void {
    const { o } = this;
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", ...o.programEnv, ...o.awsEnv, ...overrides };
    const gateway = spawnLogged([o.bundlePath], env, this.logFile());
    this.gateway = gateway;
    this.logOffset = gateway.logOffset;
    void gateway.exited.then(() => {
      if (this.ending || o.restartAfterMs === undefined || this.gateway !== gateway) return;
      this.restartTimer = setTimeout(() => {
        if (this.ending || this.gateway !== gateway) return;
        this.restartCount += 1;
        this.spawnGateway(overrides);
      }, o.restartAfterMs);
    });
  }

  /** The instance stops: SIGTERM (the gateway drains and exits), SIGKILL after 5 s; then the rest. */
  async stop(): Promise<void> {
    this.ending = true;
    clearTimeout(this.restartTimer);
    if (this.gateway) await terminate(this.gateway, 5_000);
    await this.teardown();
  }

  /** The instance is gone at once (reclaimed, its hook timed out, the run ends): SIGKILL, whatever it holds. */
  async kill(): Promise<void> {
    this.ending = true;
    clearTimeout(this.restartTimer);
    // The whole instance goes at once: its model serves (and counts) nothing more from here, its gateway dies.
    const model = this.model?.kill();
    this.gateway?.child.kill("SIGKILL");
    await Promise.all([this.front.close(), this.gateway?.exited, model]);
    await this.teardown();
  }

  private async teardown(): Promise<void> {
    this.gateway = undefined;
    await this.model?.kill();
    this.model = undefined;
    await this.imds.stop();
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const status = req.method === "GET" && req.url === this.o.programEnv.GPU_STATUS_PATH;
    const upstream = http.request({ host: "127.0.0.1", port: this.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      if (!status) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      readBody(answer).then(
        (body) => {
          const doc = JSON.parse(body.toString("utf8")) as { idleSeconds?: number };
          if (typeof doc.idleSeconds === "number") doc.idleSeconds *= this.o.speed;
          replyJson(res, answer.statusCode ?? 502, doc);
        },
        () => res.destroy(),
      );
    });
    // Not up (booting, stopped, gone): the connection drops, as to a host whose port is closed.
    upstream.on("error", () => req.socket.destroy());
    req.pipe(upstream);
  }
}

/** The dev instance as last seen in moto: since when it runs and serves (real ms, null while not), and its starts. */
export interface GpuServiceState {
  instanceState: string;
  serving: boolean;
  runningSinceMs: number | null;
  servingSinceMs: number | null;
  starts: number;
}

/** The dev instance: its processes run while moto shows it `running`, from the boot delay on. */
export class GpuInstanceHost {
  private readonly s: GpuServiceState = { instanceState: "unknown", serving: false, runningSinceMs: null, servingSinceMs: null, starts: 0 };
  private loop?: Promise<void>;
  private readonly stopped = new AbortController();
  /** Where the Lambdas reach it (its private IP in moto), once seen. */
  privateIp?: string;

  /** `ledger`: the windows its model processed, in order. */
  constructor(
    private readonly o: { ec2: EC2Client; bootDelayMs: number; pollMs?: number },
    readonly host: GpuHost,
    readonly ledger: readonly ProcessedWindow[],
  ) {}

  /** Takes a first look, then polls until stop(). */
  async start(): Promise<void> {
    await this.poll();
    this.loop = everyUntil(this.o.pollMs ?? 200, this.stopped.signal, () => this.poll(), false);
  }

  async stop(): Promise<void> {
    this.stopped.abort();
    await this.loop;
    await this.host.kill();
  }

  readonly state = (): GpuServiceState => ({ ...this.s });
  /** The JSON bodies of the windows its model processed. */
  readonly received = (): unknown[] => this.ledger.map((w) => w.body);

  private async poll(): Promise<void> {
    let name = "unknown";
    try {
      const out = await this.o.ec2.send(new DescribeInstancesCommand({ InstanceIds: [this.host.imds.instanceId] }));
      const instance = out.Reservations?.[0]?.Instances?.[0];
      name = instance?.State?.Name ?? name;
      this.privateIp = instance?.PrivateIpAddress ?? this.privateIp;
    } catch (err) {
      // A missing instance is a host that will never answer; moto briefly unreachable keeps the last state.
      name = (err as { name?: string }).name === "InvalidInstanceID.NotFound" ? "terminated" : this.s.instanceState;
    }
    const { s } = this;
    const now = Date.now();
    // moto starts instances at once (`pending` is never seen): the boot starts when `running` is first seen.
    if (name === "running" && s.instanceState !== "running") Object.assign(s, { runningSinceMs: now, starts: s.starts + 1 });
    s.instanceState = name;
    if (name !== "running") {
      Object.assign(s, { runningSinceMs: null, servingSinceMs: null, serving: false });
      if (this.host.running()) await this.host.stop();
    } else if (!s.serving && s.runningSinceMs !== null && now >= s.runningSinceMs + this.o.bootDelayMs && !this.stopped.signal.aborted) {
      await this.host.start();
      Object.assign(s, { serving: true, servingSinceMs: s.runningSinceMs + this.o.bootDelayMs });
    }
  }
}

/** How many times each `step` appears in the gateways' logs (`gpu-gateway-<instance>.log` in `logDir`; one instance's, or all). */
export function gatewaySteps(logDir: string, instanceId = ".*"): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const file of fs.existsSync(logDir) ? fs.readdirSync(logDir).filter((f) => new RegExp(`^gpu-gateway-${instanceId}\\.log$`).test(f)) : []) {
    for (const m of fs.readFileSync(path.join(logDir, file), "utf8").matchAll(/"step":"([a-z_]+)"/g)) counts[m[1] ?? ""] = (counts[m[1] ?? ""] ?? 0) + 1;
  }
  return counts;
}
