import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ModelRequest {
  key: string | undefined;
  body: string;
}

/** What the fake model answers one window with: an answer, or nothing until the test lets it go (or the client gives up). */
export type ModelReply = { status: number; body?: string } | "hang";

/**
 * A user's model server on 127.0.0.1 for the gateway's tests: records each window, answers as the
 * test says (by default 200 with a body naming the key), and its health path answers `health`.
 * `gate` holds every answer until `open()`: the tests see windows at the model without timers.
 */
export class FakeModel {
  readonly requests: ModelRequest[] = [];
  health = 200;
  healthRequests = 0;
  reply: (r: ModelRequest) => ModelReply = (r) => ({ status: 200, body: JSON.stringify({ served: r.key }) });
  /** Windows at the model now, and the most at once. */
  atModel = 0;
  maxAtModel = 0;
  private gated = false;
  private waiting: Array<() => void> = [];
  private server: Server | undefined;
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Holds every answer from now until `open()`. */
  gate(): void {
    this.gated = true;
  }

  /** Lets `n` held answers go (all when unset), oldest first. */
  open(n?: number): void {
    if (n === undefined) this.gated = false;
    for (const w of this.waiting.splice(0, n ?? this.waiting.length)) w();
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.open();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    if (req.method === "GET" && req.url === "/health") {
      this.healthRequests++;
      res.writeHead(this.health).end();
      return;
    }
    const r: ModelRequest = { key: req.headers["idempotency-key"] as string | undefined, body };
    this.requests.push(r);
    this.atModel++;
    this.maxAtModel = Math.max(this.maxAtModel, this.atModel);
    if (this.gated) await new Promise<void>((resolve) => this.waiting.push(resolve));
    const reply = this.reply(r);
    if (reply === "hang") {
      res.on("close", () => this.atModel--);
      return;
    }
    this.atModel--;
    res.writeHead(reply.status, { "content-type": "application/json" }).end(reply.body ?? "");
  }
}

export function readAll(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over node:http (no undici timers under the fake clock), answering status, headers and text. */
export function httpCall(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? "GET", headers: init.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(init.body);
  });
}
