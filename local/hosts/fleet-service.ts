/**
 * One GPU instance's service in the fleet, on a loopback port: what the real service on a fleet
 * instance does, at the platform's speed.
 * - Booting (until `bootRealMs` after it was first seen): unreachable, like a host whose service is
 *   not up (the socket is destroyed without a response; the caller's fetch fails).
 * - Serving: `slots` windows at a time, each taking `windowRealMs`; more wait their turn in arrival
 *   order (the service's own queue). A window whose Idempotency-Key this instance already processed is
 *   answered as a repeat without work, as the single GPU's service does (docs/parts/ingest.md).
 * - `GET <statusPath>`: `{ active, idleSeconds }`, what the scaler and the load balancer's health check read.
 * - `kill()`: the instance is gone (terminated, reclaimed): every open request is cut off.
 *
 * Idempotency across the fleet: the service's contract (docs/parts/ingest.md) is that a key is
 * processed once, and behind a load balancer a redelivered window may reach another instance (SQS
 * delivers at least once, and a second receive can overlap the first). So the fleet's instances
 * share one key store (`SharedKeys`; a real fleet keeps it in a store the instances share, which is
 * the service's concern): a key is claimed when its window arrives, a copy that arrives while the
 * claim is held anywhere is refused with 409 (the caller's record fails and comes back later, as
 * with Powertools' "already in progress"), a copy after it finished is answered as a repeat, and a
 * claim is released if its window is cut off unfinished. `GpuFleetSimulator.servedTwice` still
 * counts what was processed twice, so the accounting would show a broken claim.
 */
import * as http from "node:http";
import { LoopbackServer, replyJson } from "./loopback";

export interface ProcessedWindow {
  instanceId: string;
  /** The Idempotency-Key header ("" when none). */
  key: string;
  body: unknown;
  /** Real epoch ms at which the window finished. */
  atMs: number;
}

/** The key store the fleet's instances share: keys finished, and keys claimed by a window in progress. */
export class SharedKeys {
  readonly done = new Set<string>();
  readonly claimed = new Set<string>();
}

export interface FleetServiceOptions {
  instanceId: string;
  /** Real epoch ms from which the service answers. */
  servingFromMs: number;
  /** Real ms one window takes on one slot (0: at once). */
  windowRealMs: number;
  /** Windows worked on at once. */
  slots: number;
  servicePath: string;
  statusPath: string;
  /** Simulated seconds per real second, for the status's idleSeconds. */
  speed: number;
  onProcessed: (w: ProcessedWindow) => void;
  /** The fleet's shared key store. @default a store of this instance's own */
  keys?: SharedKeys;
  now?: () => number;
}

export class FleetInstanceService {
  private readonly server = new LoopbackServer((req, res) => this.handle(req, res));
  private readonly keys: SharedKeys;
  /** Keys this instance claimed and has not finished: released if it is killed. */
  private readonly mine = new Set<string>();
  private conflicts = 0;
  private readonly waiting: Array<() => void> = [];
  private busy = 0;
  private queued = 0;
  private lastWorkMs: number | null = null;
  private killed = false;
  private repeats = 0;
  private readonly now: () => number;

  constructor(readonly opts: FleetServiceOptions) {
    if (!opts.servicePath.startsWith("/") || !opts.statusPath.startsWith("/")) throw new Error("FleetInstanceService: paths must start with /");
    if (!(opts.slots >= 1)) throw new Error(`FleetInstanceService: slots must be ≥ 1, got ${opts.slots}`);
    this.now = opts.now ?? Date.now;
    this.keys = opts.keys ?? new SharedKeys();
  }

  start(): Promise<{ host: string; port: number }> {
    return this.server.start();
  }

  /** The instance is gone: open requests are cut off, nothing answers again. */
  async kill(): Promise<void> {
    this.killed = true;
    // Windows cut off unfinished were never processed: their keys may be processed by a later delivery.
    for (const key of this.mine) this.keys.claimed.delete(key);
    this.mine.clear();
    for (const wake of this.waiting.splice(0)) wake();
    await this.server.close();
  }

  serving(): boolean {
    return !this.killed && this.now() >= this.opts.servingFromMs;
  }

  /** Windows being worked on now. */
  active(): number {
    return this.busy;
  }

  /** Windows worked on or waiting: what must finish before the instance can go without cutting any off. */
  outstanding(): number {
    return this.busy + this.queued;
  }

  repeatedDeliveries(): number {
    return this.repeats;
  }

  /** Copies refused with 409 because their key was claimed by a window in progress. */
  conflictingDeliveries(): number {
    return this.conflicts;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (!this.serving()) {
      req.socket.destroy();
      return;
    }
    const url = new URL(req.url ?? "/", "http://gpu.local");
    if (req.method === "GET" && url.pathname === this.opts.statusPath) {
      req.resume();
      const since = Math.max(this.lastWorkMs ?? 0, this.opts.servingFromMs);
      const idle = this.outstanding() > 0 ? 0 : ((this.now() - since) * this.opts.speed) / 1000;
      replyJson(res, 200, { active: this.outstanding(), idleSeconds: Math.max(0, idle) });
      return;
    }
    if (req.method !== "POST" || url.pathname !== this.opts.servicePath) {
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
      const header = req.headers["idempotency-key"];
      const key = typeof header === "string" ? header : "";
      void this.work(key, body, res);
    });
  }

  private async work(key: string, body: unknown, res: http.ServerResponse): Promise<void> {
    if (key !== "" && this.keys.done.has(key)) {
      this.repeats += 1;
      replyJson(res, 200, { accepted: true, repeat: true });
      return;
    }
    if (key !== "" && this.keys.claimed.has(key)) {
      this.conflicts += 1;
      replyJson(res, 409, { error: "a window with this Idempotency-Key is in progress" });
      return;
    }
    if (key !== "") {
      this.keys.claimed.add(key);
      this.mine.add(key);
    }
    this.queued += 1;
    if (this.busy >= this.opts.slots) await new Promise<void>((wake) => this.waiting.push(wake));
    this.queued -= 1;
    if (this.killed) return;
    this.busy += 1;
    try {
      if (this.opts.windowRealMs > 0) await new Promise((r) => setTimeout(r, this.opts.windowRealMs));
      if (this.killed) return;
      if (key !== "") {
        this.keys.done.add(key);
        this.keys.claimed.delete(key);
        this.mine.delete(key);
      }
      this.lastWorkMs = this.now();
      this.opts.onProcessed({ instanceId: this.opts.instanceId, key, body, atMs: this.lastWorkMs });
      replyJson(res, 200, { accepted: true });
    } finally {
      this.busy -= 1;
      this.waiting.shift()?.();
    }
  }
}
