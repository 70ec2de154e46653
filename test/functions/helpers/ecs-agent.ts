import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface AgentRequest {
  method: string;
  url: string;
  body: { ProtectionEnabled?: boolean; ExpiresInMinutes?: number } | undefined;
  /** The raw body as sent ("" when none). */
  raw: string;
  contentType: string | undefined;
  at: number;
}

/** `body`, when given, is sent as is instead of the protection state. */
export type AgentBehaviour = { status: number; body?: string } | "reset" | "failure";

/**
 * Plays the ECS agent's task-protection endpoint on 127.0.0.1 (`$ECS_AGENT_URI/task-protection/v1/state`):
 * records every request with its time, keeps the protection state, and answers as configured.
 */
export class FakeEcsAgent {
  readonly requests: AgentRequest[] = [];
  behaviour: AgentBehaviour = { status: 200 };
  protectedNow = false;
  /** Answer this many of the next requests with HTTP 500, then behave as configured. */
  failNext = 0;
  /** Answer each request this long after it arrived (on the test's clock, fake or real). */
  delayMs = 0;
  private server: Server | undefined;
  private port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const body = raw ? (JSON.parse(raw) as AgentRequest["body"]) : undefined;
        this.requests.push({ method: req.method ?? "", url: req.url ?? "", body, raw, contentType: req.headers["content-type"], at: Date.now() });
        if (this.delayMs > 0) setTimeout(() => this.answer(req, res, body), this.delayMs);
        else this.answer(req, res, body);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  private answer(req: IncomingMessage, res: ServerResponse, body: AgentRequest["body"]): void {
    if (this.failNext > 0) {
      this.failNext -= 1;
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "agent unavailable" }));
      return;
    }
    if (this.behaviour === "reset") {
      req.socket.destroy();
      return;
    }
    if (this.behaviour === "failure") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ failure: { Reason: "TASK_NOT_VALID", Arn: "arn:aws:ecs:us-east-1:123456789012:task/c/t" } }));
      return;
    }
    if (req.method === "PUT" && this.behaviour.status === 200) this.protectedNow = body?.ProtectionEnabled === true;
    res.writeHead(this.behaviour.status, { "content-type": "application/json" });
    res.end(
      this.behaviour.body ?? JSON.stringify({ protection: { ProtectionEnabled: this.protectedNow, TaskArn: "arn:aws:ecs:us-east-1:123456789012:task/c/t" } }),
    );
  }

  /** What ECS puts in ECS_AGENT_URI: a base URL the worker appends the endpoint path to. */
  get uri(): string {
    return `http://127.0.0.1:${this.port}/api/task-1234`;
  }

  /** `true`/`false` for each PUT, in order: the protect/unprotect sequence. */
  puts(): boolean[] {
    return this.requests.filter((r) => r.method === "PUT").map((r) => r.body?.ProtectionEnabled === true);
  }

  reset(): void {
    this.requests.length = 0;
    this.behaviour = { status: 200 };
    this.protectedNow = false;
    this.failNext = 0;
    this.delayMs = 0;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** A port nothing listens on: connections are refused. */
export const DEAD_AGENT_URI = "http://127.0.0.1:9/api/task-dead";
