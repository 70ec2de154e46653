/**
 * The user's model server on a local GPU instance: the only simulated part of the local GPU tier
 * (docs/local-run.md, "The GPU tier"). The real gateway bundle runs in front of it and owns the
 * contract (keys, status, drain); this only does the work, at the platform's pace:
 * - `POST <path>`: takes `windowRealMs` on one of `slots` (the rest wait in arrival order), then
 *   answers 200 JSON and counts the window in the shared `ModelLedger`. A window cut off by `kill()`
 *   was never processed and is not counted.
 * - `GET <healthPath>`: 200 (it answers only once started, i.e. booted).
 * The ledger is shared by every fake model of the run: a key counted twice there was served twice.
 */
import type * as http from "node:http";
import { LoopbackServer, replyJson } from "./loopback";

export interface ProcessedWindow {
  instanceId: string;
  /** The Idempotency-Key header ("" when none). */
  key: string;
  body: unknown;
  /** Real epoch ms at which the window finished. */
  atMs: number;
}

/** What every fake model of the run processed, in order. */
export class ModelLedger {
  readonly processed: ProcessedWindow[] = [];

  /** Keys processed more than once, across every model. */
  servedTwice(): number {
    const seen = new Map<string, number>();
    for (const w of this.processed) if (w.key !== "") seen.set(w.key, (seen.get(w.key) ?? 0) + 1);
    return [...seen.values()].filter((n) => n > 1).length;
  }

  of(instanceId: string): ProcessedWindow[] {
    return this.processed.filter((w) => w.instanceId === instanceId);
  }
}

export interface FakeModelOptions {
  instanceId: string;
  path: string;
  healthPath: string;
  /** Real ms one window takes on one slot (0: at once). */
  windowRealMs: number;
  slots: number;
  ledger: ModelLedger;
}

export class FakeModel {
  private readonly server = new LoopbackServer((req, res) => this.handle(req, res));
  private readonly waiting: Array<() => void> = [];
  private busy = 0;
  private queued = 0;
  private killed = false;

  constructor(readonly opts: FakeModelOptions) {
    if (!(opts.slots >= 1)) throw new Error(`FakeModel: slots must be ≥ 1, got ${opts.slots}`);
  }

  /** Listens on a free loopback port; resolves to its base URL. */
  async start(): Promise<string> {
    const { host, port } = await this.server.start();
    return `http://${host}:${port}`;
  }

  /** The instance is gone: windows in progress are cut off (not counted), nothing answers again. */
  async kill(): Promise<void> {
    this.killed = true;
    for (const wake of this.waiting.splice(0)) wake();
    await this.server.close();
  }

  /** Windows at the model: worked on or waiting for a slot. */
  outstanding(): number {
    return this.busy + this.queued;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? "/", "http://model.local");
    if (req.method === "GET" && url.pathname === this.opts.healthPath) {
      req.resume();
      replyJson(res, 200, { ok: true });
      return;
    }
    if (req.method !== "POST" || url.pathname !== this.opts.path) {
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
      void this.work(typeof header === "string" ? header : "", body, res);
    });
  }

  private async work(key: string, body: unknown, res: http.ServerResponse): Promise<void> {
    let callerGone = false;
    res.on("close", () => (callerGone = !res.writableFinished));
    this.queued += 1;
    if (this.busy >= this.opts.slots) await new Promise<void>((wake) => this.waiting.push(wake));
    this.queued -= 1;
    if (this.killed) return;
    this.busy += 1;
    try {
      if (this.opts.windowRealMs > 0) await new Promise((r) => setTimeout(r, this.opts.windowRealMs));
      // The answer must still be deliverable: a window whose caller is gone was not served.
      if (this.killed || callerGone) return;
      this.opts.ledger.processed.push({ instanceId: this.opts.instanceId, key, body, atMs: Date.now() });
      replyJson(res, 200, { processed: true, key });
    } finally {
      this.busy -= 1;
      this.waiting.shift()?.();
    }
  }
}
