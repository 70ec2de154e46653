/**
 * Plays the GPU service on a loopback port, tied to the GPU instance's state in moto: it answers
 * only once the instance has been `running` for the boot delay, as the real service would after
 * the machine boots and the service starts.
 *
 * While the instance is stopped or still booting, the simulator behaves like an unreachable host:
 * it destroys the socket without a response. Node's fetch then rejects ("fetch failed"), which is
 * what the ingest window function counts as a failed delivery. (A real stopped instance would
 * rather time out on connect; a reset fails the same way, without making every run wait.)
 */
import { DescribeInstancesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import type * as http from "node:http";
import { LoopbackServer, replyJson } from "./loopback";

export interface GpuServiceState {
  /** The instance state last seen in moto (`unknown` before the first poll answers). */
  instanceState: string;
  serving: boolean;
  /** When the instance was first seen running, since its last start (null while not running). */
  runningSinceMs: number | null;
  /** When it started serving: runningSince + bootDelay (null while not serving). */
  servingSinceMs: number | null;
  /** Transitions into `running` seen so far, the first observation included. */
  starts: number;
}

export class GpuServiceSimulator {
  private readonly ec2: EC2Client;
  private readonly instanceId: string;
  private readonly path: string;
  private readonly bootDelayMs: number;
  private readonly pollMs: number;
  private readonly now: () => number;
  /** Set between start() and stop(): the poll reschedules itself only while it is. */
  private server?: LoopbackServer;
  private timer?: NodeJS.Timeout;
  private polling?: Promise<void>;
  private instanceState = "unknown";
  private runningSinceMs: number | null = null;
  private starts = 0;
  private readonly bodies: unknown[] = [];
  /** Real epoch ms at which each accepted body arrived, index for index with `bodies`. */
  private readonly arrivals: number[] = [];
  /** Idempotency keys already processed: a repeat is answered 200 and not processed again. */
  private readonly keys = new Set<string>();
  private repeats = 0;
  private readonly statusPath: string;
  private readonly speed: number;
  /** When the service last received a window (real ms), for its status's idleSeconds. */
  private lastWorkMs: number | null = null;

  constructor(opts: {
    ec2: EC2Client;
    instanceId: string;
    path: string;
    bootDelayMs: number;
    pollMs?: number;
    now?: () => number;
    statusPath?: string;
    speed?: number;
  }) {
    if (!opts.path.startsWith("/")) throw new Error(`GpuServiceSimulator: path must start with /, got ${opts.path}`);
    this.ec2 = opts.ec2;
    this.instanceId = opts.instanceId;
    this.path = opts.path;
    this.bootDelayMs = Math.max(0, opts.bootDelayMs);
    this.pollMs = opts.pollMs ?? 200;
    this.now = opts.now ?? Date.now;
    this.statusPath = opts.statusPath ?? "/status";
    // idleSeconds is reported in the platform's (simulated) seconds, as the idle check reads its clock.
    this.speed = opts.speed ?? 1;
  }

  /** Reads the instance's state once, then listens on a free loopback port. */
  async start(): Promise<{ host: string; port: number }> {
    if (this.server) throw new Error("GpuServiceSimulator already started");
    await this.poll();
    const server = new LoopbackServer((req, res) => this.handle(req, res));
    this.server = server;
    const address = await server.start();
    this.schedulePoll();
    return address;
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const server = this.server;
    this.server = undefined;
    await this.polling;
    await server?.close();
  }

  state(): GpuServiceState {
    const servingSinceMs = this.servingSince();
    return {
      instanceState: this.instanceState,
      serving: servingSinceMs !== null,
      runningSinceMs: this.runningSinceMs,
      servingSinceMs,
      starts: this.starts,
    };
  }

  /** POSTs answered as repeats of an Idempotency-Key already processed (not in `received()`). */
  repeatedDeliveries(): number {
    return this.repeats;
  }

  /** JSON bodies of the processed POSTs (one per Idempotency-Key), in arrival order. */
  received(): unknown[] {
    return [...this.bodies];
  }

  /**
   * The accepted POSTs with the moment each arrived (real epoch ms), in arrival order: timings
   * taken from these are exact, where a scenario that polls sees an arrival only at its next tick.
   */
  receivedAt(): Array<{ body: unknown; atMs: number }> {
    return this.bodies.map((body, i) => ({ body, atMs: this.arrivals[i] ?? 0 }));
  }

  private servingSince(): number | null {
    if (this.instanceState !== "running" || this.runningSinceMs === null) return null;
    const since = this.runningSinceMs + this.bootDelayMs;
    // Checked against the clock on every request, not only at polls, so serving begins on time.
    return this.now() >= since ? since : null;
  }

  private schedulePoll(): void {
    if (!this.server) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll().finally(() => this.schedulePoll());
    }, this.pollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    let state: string | undefined;
    try {
      const out = await this.ec2.send(new DescribeInstancesCommand({ InstanceIds: [this.instanceId] }));
      state = out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
    } catch (err) {
      // A missing or terminated instance is a host that will never answer; moto being briefly
      // unreachable keeps the last known state rather than flapping the service.
      if ((err as { name?: string }).name === "InvalidInstanceID.NotFound") state = "terminated";
      else return;
    }
    this.observe(state ?? "unknown");
  }

  private observe(state: string): void {
    if (state === "running" && this.instanceState !== "running") {
      // moto starts instances instantly (`pending` is never seen): the boot clock starts when
      // the simulator first sees `running`, and a stop→start cycle restarts it.
      this.runningSinceMs = this.now();
      this.starts++;
    } else if (state !== "running") {
      this.runningSinceMs = null;
    }
    this.instanceState = state;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (this.servingSince() === null) {
      // Unreachable: no status line, no body; the client sees the connection drop.
      req.socket.destroy();
      return;
    }
    const url = new URL(req.url ?? "/", "http://gpu.local");
    if (req.method === "GET" && url.pathname === this.statusPath) {
      req.resume();
      // Windows are handled synchronously here, so none is ever active between requests.
      const since = Math.max(this.lastWorkMs ?? 0, this.servingSince() ?? 0);
      replyJson(res, 200, { active: 0, idleSeconds: Math.max(0, ((this.now() - since) * this.speed) / 1000) });
      return;
    }
    if (req.method !== "POST" || url.pathname !== this.path) {
      req.resume();
      replyJson(res, 404, { error: `no route for ${req.method} ${url.pathname}` });
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("error", () => res.destroy());
    req.on("end", () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch (err) {
        replyJson(res, 400, { error: `body is not JSON: ${(err as Error).message}` });
        return;
      }
      // The service's contract (docs/parts/ingest.md): a key is processed once, its repeats are
      // acknowledged, so an at-least-once delivery has its effect once.
      const key = req.headers["idempotency-key"];
      if (typeof key === "string" && key !== "") {
        if (this.keys.has(key)) {
          this.repeats += 1;
          replyJson(res, 200, { accepted: true, repeat: true });
          return;
        }
        this.keys.add(key);
      }
      this.bodies.push(body);
      this.lastWorkMs = this.now();
      this.arrivals.push(this.lastWorkMs);
      replyJson(res, 200, { accepted: true });
    });
  }
}
