import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";

/** AWS's advice: refresh protection at 80 % of its expiry, so it never lapses under a live job. */
export const REFRESH_FRACTION = 0.8;

export function refreshIntervalMs(expiresInMinutes: number): number {
  return Math.floor(expiresInMinutes * 60_000 * REFRESH_FRACTION);
}

export type AgentFetch = (url: string, init: RequestInit) => Promise<Response>;

export interface TaskProtectionOptions {
  /** `$ECS_AGENT_URI`; undefined outside ECS, and then every call is a no-op. */
  agentUri: string | undefined;
  /** `ExpiresInMinutes` sent with each enable (1–2880). */
  expiresInMinutes: number;
  /** @default 80 % of the expiry */
  refreshIntervalMs?: number;
  /** @default 5000 */
  requestTimeoutMs?: number;
  /**
   * While a job holds protection and the last enable failed, retry it after this long rather
   * than waiting for the next refresh (48 min at the default expiry) with the job unprotected.
   * @default 15000
   */
  enableRetryMs?: number;
  fetch?: AgentFetch;
  logger: StepLogger;
  metrics: MetricsSink;
}

type Reason = "job_started" | "refresh" | "retry" | "idle" | "reconcile" | "shutdown";

/**
 * Task scale-in protection through the ECS agent endpoint, held as a counting semaphore: the
 * first job in flight protects the task, the last one to finish releases it, so one job ending
 * never unprotects another's work. Calls are serialised, so the agent sees the states in the
 * order they happened. Endpoint failures are logged and counted, never thrown: a job must not
 * fail because protection could not be changed.
 */
export class TaskProtection {
  private inFlight = 0;
  private heldSince: number | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private readonly url: string | undefined;
  private readonly fetchFn: AgentFetch;
  private readonly refreshMs: number;
  private readonly timeoutMs: number;
  private readonly retryMs: number;

  constructor(private readonly o: TaskProtectionOptions) {
    this.url = o.agentUri ? `${o.agentUri.replace(/\/+$/, "")}/task-protection/v1/state` : undefined;
    this.fetchFn = o.fetch ?? ((url, init) => fetch(url, init));
    this.refreshMs = o.refreshIntervalMs ?? refreshIntervalMs(o.expiresInMinutes);
    this.timeoutMs = o.requestTimeoutMs ?? 5000;
    this.retryMs = o.enableRetryMs ?? 15_000;
  }

  get enabled(): boolean {
    return this.url !== undefined;
  }

  /** Jobs currently holding protection. */
  get holders(): number {
    return this.inFlight;
  }

  /** Milliseconds protection has been held without a break (0 when not held). */
  heldForMs(now = Date.now()): number {
    return this.heldSince === undefined ? 0 : now - this.heldSince;
  }

  acquire(): Promise<void> {
    this.inFlight += 1;
    if (this.inFlight > 1) return this.chain;
    this.heldSince = Date.now();
    this.refreshTimer = setInterval(() => void this.enqueue(true, "refresh"), this.refreshMs);
    this.refreshTimer.unref();
    return this.enqueue(true, "job_started");
  }

  release(): Promise<void> {
    if (this.inFlight === 0) return this.chain;
    this.inFlight -= 1;
    if (this.inFlight > 0) return this.chain;
    this.stopRefresh();
    return this.enqueue(false, "idle");
  }

  /**
   * At start-up: a previous container of this task may have died while protected. Nothing is in
   * flight yet, so a protection found on means nothing needs it: release it.
   */
  async reconcile(): Promise<void> {
    if (!this.url) {
      logStep(this.o.logger, "info", "task_protection_disabled", { reason: "ECS_AGENT_URI is not set" });
      return;
    }
    const state = await this.request(this.url, "GET");
    const enabled = readProtectionEnabled(state);
    if (enabled === true && this.inFlight === 0) await this.enqueue(false, "reconcile");
  }

  /**
   * On shutdown: drop every hold and release once, whatever the count. `timeoutMs` bounds the
   * agent call, since the stop timeout has little left by now.
   */
  async releaseAll(timeoutMs = this.timeoutMs): Promise<void> {
    const wasHeld = this.inFlight > 0;
    this.inFlight = 0;
    this.stopRefresh();
    if (wasHeld) await this.enqueue(false, "shutdown", timeoutMs);
    await this.chain;
  }

  private stopRefresh(): void {
    clearInterval(this.refreshTimer);
    this.refreshTimer = undefined;
    this.clearRetry();
    this.heldSince = undefined;
  }

  private clearRetry(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  /** After a failed enable while a job still holds protection: try again soon, once at a time. */
  private scheduleRetry(): void {
    if (this.inFlight === 0 || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.enqueue(true, "retry");
    }, this.retryMs);
    this.retryTimer.unref();
  }

  private enqueue(enabled: boolean, reason: Reason, timeoutMs = this.timeoutMs): Promise<void> {
    this.chain = this.chain.then(() => this.put(enabled, reason, timeoutMs));
    return this.chain;
  }

  private async put(enabled: boolean, reason: Reason, timeoutMs: number): Promise<void> {
    const url = this.url;
    if (!url) return;
    // Queued before the last job ended: nothing needs protecting any more.
    if (reason === "retry" && this.inFlight === 0) return;
    const body = enabled ? { ProtectionEnabled: true, ExpiresInMinutes: this.o.expiresInMinutes } : { ProtectionEnabled: false };
    const ok = (await this.request(url, "PUT", body, timeoutMs)) !== undefined;
    if (enabled) {
      if (ok) this.clearRetry();
      else this.scheduleRetry();
    }
    if (!ok) return;
    if (reason === "refresh") {
      logStep(this.o.logger, "debug", "task_protection_refreshed", { expires_in_minutes: this.o.expiresInMinutes });
      return;
    }
    logStep(this.o.logger, "info", "task_protection_changed", {
      enabled,
      reason,
      ...(enabled ? { expires_in_minutes: this.o.expiresInMinutes } : {}),
    });
    countOne(this.o.metrics, enabled ? "TaskProtectionEnabled" : "TaskProtectionReleased");
  }

  /** The parsed reply, or undefined after logging the failure. */
  private async request(url: string, method: "GET" | "PUT", body?: { ProtectionEnabled: boolean }, timeoutMs = this.timeoutMs): Promise<unknown> {
    try {
      const res = await this.fetchFn(url, {
        method,
        headers: { "content-type": "application/json" },
        // undefined for the GET (JSON.stringify(undefined) is undefined): no body.
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${text.slice(0, 500)}`);
      const parsed: unknown = text ? JSON.parse(text) : {};
      // The agent answers 200 with a `failure` object when ECS refused the change.
      // A primitive has no `failure`; only null needs the `?.`.
      const failure = (parsed as { failure?: unknown } | null)?.failure;
      if (failure) throw new Error(`agent reported failure: ${JSON.stringify(failure)}`);
      return parsed;
    } catch (error) {
      logStep(this.o.logger, "warn", "task_protection_failed", {
        method,
        ...(body ? { enabled: body.ProtectionEnabled } : {}),
        error: errorMessage(error),
      });
      countOne(this.o.metrics, "TaskProtectionFailures");
      return undefined;
    }
  }
}

/** `{"protection": {"ProtectionEnabled": true, …}}` is the agent's reply shape. */
export function readProtectionEnabled(reply: unknown): boolean | undefined {
  if (typeof reply !== "object" || reply === null) return undefined;
  const protection = (reply as { protection?: { ProtectionEnabled?: unknown } }).protection;
  return typeof protection?.ProtectionEnabled === "boolean" ? protection.ProtectionEnabled : undefined;
}
