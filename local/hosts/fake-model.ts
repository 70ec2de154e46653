/**
 * The user's model server on a local GPU instance: the only simulated part of the local GPU tier
 * (docs/local-run.md, "The GPU tier"). The real gateway in front of it owns the contract (keys,
 * status, drain); this only does the work, at the platform's pace:
 * - `POST <path>`: takes `windowRealMs` on one of `slots` (the rest wait in arrival order), answers 200
 *   JSON and records the window in the run's ledger. A window cut off (by `kill()`, or its
 *   caller gone) was not served and is not recorded.
 * - `GET <healthPath>`: 200 (it answers only once started, i.e. booted).
 */
import type * as http from "node:http";
import { readBody } from "../aws/intercepting-proxy";
import { LoopbackServer, replyJson } from "../aws/loopback";

export interface ProcessedWindow {
  instanceId: string;
  /** The Idempotency-Key header ("" when none). */
  key: string;
  body: unknown;
  /** Real epoch ms at which the window finished. */
  atMs: number;
}

/**
 * Pure: a session's windows in a ledger (by windowIndex): the distinct ones, when the n-th distinct one
 * finished, and how many were processed more than once (served twice).
 */
export function sessionWindows(ledger: readonly ProcessedWindow[], sessionId: string, n = Number.POSITIVE_INFINITY) {
  const count = new Map<number, number>();
  let completedAtMs: number | null = null;
  for (const w of ledger) {
    const { sessionId: id, windowIndex } = w.body as { sessionId?: unknown; windowIndex?: unknown };
    if (id !== sessionId || typeof windowIndex !== "number") continue;
    count.set(windowIndex, (count.get(windowIndex) ?? 0) + 1);
    if (completedAtMs === null && count.size >= n) completedAtMs = w.atMs;
  }
  return { got: count.size, completedAtMs, twice: [...count.values()].filter((c) => c > 1).length };
}

export interface FakeModelOptions {
  instanceId: string;
  path: string;
  healthPath: string;
  /** Real ms one window takes on one slot (0: at once). */
  windowRealMs: number;
  slots: number;
  /** What every fake model of the run processed, in order: a key recorded twice was served twice. */
  ledger: ProcessedWindow[];
}

export class FakeModel {
  private readonly server = new LoopbackServer((req, res) => void this.handle(req, res));
  private readonly waiting: Array<() => void> = [];
  private busy = 0;
  private queued = 0;
  private killed = false;

  constructor(readonly opts: FakeModelOptions) {}

  /** Listens on a free loopback port; resolves to its base URL. */
  async start(): Promise<string> {
    const { host, port } = await this.server.start();
    return `http://${host}:${port}`;
  }

  /** The instance is gone: windows in progress are cut off, nothing answers again. */
  async kill(): Promise<void> {
    this.killed = true;
    for (const wake of this.waiting.splice(0)) wake();
    await this.server.close();
  }

  /** Windows at the model: worked on or waiting for a slot. */
  readonly outstanding = (): number => this.busy + this.queued;

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const { pathname } = new URL(req.url ?? "/", "http://model.local");
    const body = await readBody(req).catch(() => undefined);
    if (req.method === "GET" && pathname === this.opts.healthPath) return replyJson(res, 200, { ok: true });
    if (req.method !== "POST" || pathname !== this.opts.path) return replyJson(res, 404, { error: `no route for ${req.method} ${pathname}` });
    let window: unknown;
    try {
      window = JSON.parse(body?.toString("utf8") ?? "");
    } catch {
      return replyJson(res, 400, { error: "body is not JSON" });
    }
    const header = req.headers["idempotency-key"];
    const key = typeof header === "string" ? header : "";
    let callerGone = false;
    res.on("close", () => (callerGone = !res.writableFinished));
    this.queued += 1;
    if (this.busy >= this.opts.slots) await new Promise<void>((wake) => this.waiting.push(wake));
    this.queued -= 1;
    if (this.killed) return;
    this.busy += 1;
    if (this.opts.windowRealMs > 0) await new Promise((r) => setTimeout(r, this.opts.windowRealMs));
    this.busy -= 1;
    this.waiting.shift()?.();
    if (this.killed || callerGone) return;
    this.opts.ledger.push({ instanceId: this.opts.instanceId, key, body: window, atMs: Date.now() });
    replyJson(res, 200, { processed: true, key });
  }
}
