/**
 * The ECS agent's task scale-in protection endpoint, played locally: moto does not implement
 * UpdateTaskProtection/GetTaskProtection, and the worker talks to the agent, not to the ECS API,
 * anyway (`$ECS_AGENT_URI/task-protection/v1/state`). One agent serves one task, as on ECS.
 *
 * Shapes follow the agent: the request is `{"ProtectionEnabled": bool, "ExpiresInMinutes": n}`
 * (n 1–2880, default 120); a success answers `{"protection": {"ExpirationDate", "ProtectionEnabled",
 * "TaskArn"}}` (Go field names, a nil date as null); a refused change answers 200 with `failure`;
 * a bad request answers 400 with `error: {Code, Message}`.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBody } from "../aws/intercepting-proxy";
import { LoopbackServer, replyJson } from "../aws/loopback";

/** AWS's default when a PUT enables protection without `ExpiresInMinutes`. */
export const DEFAULT_EXPIRES_IN_MINUTES = 120;
const MAX_EXPIRES_IN_MINUTES = 2880;
const STATE_PATH = "/task-protection/v1/state";

interface ProtectionChange {
  atMs: number;
  protectionEnabled: boolean;
  /** As applied (the default filled in); absent on a disable. */
  expiresInMinutes?: number;
}

interface AgentRequestRecord {
  atMs: number;
  method: string;
  path: string;
  status: number;
}

export class TaskProtectionAgent {
  /** The v4 endpoint id ECS puts in ECS_AGENT_URI (`…/v4/<id>`). */
  readonly id = randomUUID().replaceAll("-", "");
  readonly taskArn: string;
  private readonly now: () => number;
  private readonly server = new LoopbackServer((req, res) => void this.handle(req, res));
  private base = "";
  private enabled = false;
  private expiresAtMs: number | null = null;
  private readonly changes: ProtectionChange[] = [];
  private readonly log: AgentRequestRecord[] = [];
  /** The statuses the next requests fail with (failNext). */
  private failures: number[] = [];

  /** `taskArn`: reported as `TaskArn` (default: a made-up ARN with the agent's id); `now`: a test's clock, to make protection lapse without waiting. */
  constructor(opts: { taskArn?: string; now?: () => number } = {}) {
    this.taskArn = opts.taskArn ?? `arn:aws:ecs:us-east-1:123456789012:task/local/${this.id}`;
    this.now = opts.now ?? Date.now;
  }

  /** Listens on a free loopback port; resolves to the ECS_AGENT_URI value. */
  async start(): Promise<string> {
    if (this.base) return this.base;
    const { host, port } = await this.server.start();
    this.base = `http://${host}:${port}/v4/${this.id}`;
    return this.base;
  }

  /** ECS_AGENT_URI (only after start()). */
  get uri(): string {
    if (!this.base) throw new Error("TaskProtectionAgent is not started");
    return this.base;
  }

  readonly stop = (): Promise<void> => this.server.close();

  /** The protection as ECS would see it now: it lapses by itself at its expiry. */
  state(): { protectionEnabled: boolean; expiresAtMs: number | null } {
    if (this.enabled && this.expiresAtMs !== null && this.now() >= this.expiresAtMs) {
      this.enabled = false;
      this.expiresAtMs = null;
    }
    return { protectionEnabled: this.enabled, expiresAtMs: this.expiresAtMs };
  }

  /** Every accepted PUT, in order (a refresh shows as another enable). */
  history(): ProtectionChange[] {
    return this.changes.map((c) => ({ ...c }));
  }

  /** Every request with the status it got, failures included. */
  requests(): AgentRequestRecord[] {
    return this.log.map((r) => ({ ...r }));
  }

  /**
   * The next n requests fail without changing the state: with `status` (default 500) and an
   * `error` body, or, for 200, with the agent's `failure` body (ECS refused the change).
   */
  failNext(n: number, status = 500): void {
    this.failures = Array.from({ length: n }, () => status);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0] ?? "";
    const raw = await readBody(req).catch(() => undefined);
    // A broken body: the request is already torn down, nothing can be answered.
    if (raw === undefined) return void res.destroy();
    if (path !== new URL(this.base).pathname + STATE_PATH) return this.reply(req, res, 404, errorBody("NotFound", `no such endpoint: ${path}`));
    if (req.method !== "GET" && req.method !== "PUT") {
      return this.reply(req, res, 405, errorBody("InvalidParameterException", `method ${req.method ?? ""} not allowed`));
    }
    const failure = this.failures.shift();
    if (failure === 200) return this.reply(req, res, 200, { failure: { Arn: this.taskArn, Reason: "TASK_NOT_VALID", Detail: "simulated failure" } });
    if (failure !== undefined) return this.reply(req, res, failure, errorBody("ServerException", "simulated agent failure"));
    if (req.method === "PUT") {
      const parsed = parseUpdate(raw.toString("utf8"));
      if ("error" in parsed) return this.reply(req, res, 400, errorBody("InvalidParameterException", parsed.error));
      this.apply(parsed.enabled, parsed.expiresInMinutes);
    }
    const { protectionEnabled, expiresAtMs } = this.state();
    const expiration = expiresAtMs === null ? null : new Date(expiresAtMs).toISOString();
    return this.reply(req, res, 200, { protection: { ExpirationDate: expiration, ProtectionEnabled: protectionEnabled, TaskArn: this.taskArn } });
  }

  private apply(enabled: boolean, expiresInMinutes: number | undefined): void {
    const atMs = this.now();
    const minutes = enabled ? (expiresInMinutes ?? DEFAULT_EXPIRES_IN_MINUTES) : undefined;
    this.enabled = enabled;
    this.expiresAtMs = minutes === undefined ? null : atMs + minutes * 60_000;
    this.changes.push({ atMs, protectionEnabled: enabled, ...(minutes === undefined ? {} : { expiresInMinutes: minutes }) });
  }

  private reply(req: IncomingMessage, res: ServerResponse, status: number, body: object): void {
    this.log.push({ atMs: this.now(), method: req.method ?? "", path: req.url ?? "", status });
    replyJson(res, status, body);
  }
}

function errorBody(code: string, message: string) {
  return { error: { Code: code, Message: message } };
}

/** Validates a PUT body as ECS does: ProtectionEnabled required, ExpiresInMinutes an integer 1–2880. */
function parseUpdate(raw: string): { enabled: boolean; expiresInMinutes?: number } | { error: string } {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return { error: "UpdateTaskProtection: failed to decode request" };
  }
  if (typeof body !== "object" || body === null) return { error: "UpdateTaskProtection: failed to decode request" };
  const { ProtectionEnabled, ExpiresInMinutes } = body as Record<string, unknown>;
  if (typeof ProtectionEnabled !== "boolean") return { error: "Invalid request: does not contain 'ProtectionEnabled' field" };
  if (ExpiresInMinutes === undefined || ExpiresInMinutes === null) return { enabled: ProtectionEnabled };
  if (typeof ExpiresInMinutes !== "number" || !Number.isInteger(ExpiresInMinutes) || ExpiresInMinutes < 1 || ExpiresInMinutes > MAX_EXPIRES_IN_MINUTES) {
    return { error: `ExpiresInMinutes must be an integer from 1 to ${MAX_EXPIRES_IN_MINUTES}` };
  }
  return { enabled: ProtectionEnabled, expiresInMinutes: ExpiresInMinutes };
}
