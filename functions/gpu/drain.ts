import { type AutoScalingClient, CompleteLifecycleActionCommand } from "@aws-sdk/client-auto-scaling";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import type { FleetDrain } from "./config";
import type { FetchFn } from "./model";

/** The instance metadata service's default address; `AWS_EC2_METADATA_SERVICE_ENDPOINT` overrides it, as it does for the AWS SDK. */
export const DEFAULT_IMDS_ENDPOINT = "http://169.254.169.254";

/** One metadata read: its HTTP status and text (404 is an answer: "no such notice"). */
export interface MetadataAnswer {
  status: number;
  body: string;
}

/** Reads `latest/meta-data/<path>`; throws when the service does not answer at all. */
export interface MetadataReader {
  get(path: string): Promise<MetadataAnswer>;
}

export interface ImdsOptions {
  endpoint?: string;
  fetch: FetchFn;
  /** Per request. */
  timeoutMs?: number;
  /** The session token's lifetime asked for, seconds. */
  tokenTtlSeconds?: number;
  now?: () => number;
}

/**
 * A tiny IMDSv2 client (`@aws-sdk/ec2-metadata-service` is not among the project's packages): a
 * session token from `PUT /latest/api/token`, reused until shortly before it expires, on every
 * `GET /latest/meta-data/…`; a 401 (the token expired early, IMDS restarted) gets a new token once.
 */
export function imdsReader(o: ImdsOptions): MetadataReader {
  const endpoint = (o.endpoint ?? DEFAULT_IMDS_ENDPOINT).replace(/\/+$/, "");
  const timeoutMs = o.timeoutMs ?? 2000;
  const ttl = o.tokenTtlSeconds ?? 21600;
  const now = o.now ?? Date.now;
  let token: { value: string; renewAt: number } | undefined;
  const call = async (path: string, init: RequestInit): Promise<MetadataAnswer> => {
    const res = await o.fetch(`${endpoint}${path}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, body: await res.text() };
  };
  const sessionToken = async (): Promise<string> => {
    if (token && now() < token.renewAt) return token.value;
    const res = await call("/latest/api/token", { method: "PUT", headers: { "x-aws-ec2-metadata-token-ttl-seconds": String(ttl) } });
    if (res.status !== 200) throw new Error(`IMDS token: HTTP ${res.status}`);
    token = { value: res.body, renewAt: now() + Math.max(ttl - 60, 1) * 1000 };
    return token.value;
  };
  const get = async (path: string, fresh: boolean): Promise<MetadataAnswer> => {
    if (fresh) token = undefined;
    const res = await call(`/latest/meta-data/${path}`, { method: "GET", headers: { "x-aws-ec2-metadata-token": await sessionToken() } });
    if (res.status === 401 && !fresh) return get(path, true);
    return res;
  };
  return { get: (path) => get(path, false) };
}

/** Why the gateway drains. */
export type DrainReason = "target-lifecycle-terminated" | "spot-interruption" | "rebalance-recommendation" | "SIGTERM";

/**
 * Pure-ish: the first drain signal the metadata shows, or undefined. The Auto Scaling target state
 * `Terminated` (this instance is leaving the group: scale-in, a refresh, a replacement), a Spot
 * interruption notice, or a rebalance recommendation (the Spot capacity is at risk). The two notices
 * answer 404 until they exist.
 */
export async function readDrainSignal(metadata: MetadataReader): Promise<DrainReason | undefined> {
  const [state, spot, rebalance] = await Promise.all([
    metadata.get("autoscaling/target-lifecycle-state"),
    metadata.get("spot/instance-action"),
    metadata.get("events/recommendations/rebalance"),
  ]);
  if (state.status === 200 && state.body.trim() === "Terminated") return "target-lifecycle-terminated";
  if (spot.status === 200) return "spot-interruption";
  if (rebalance.status === 200) return "rebalance-recommendation";
  return undefined;
}

export interface DrainWatcherOptions {
  metadata: MetadataReader;
  pollMs: number;
  onSignal: (reason: DrainReason) => void;
  logger: StepLogger;
}

/** Polls the metadata every `pollMs` until a drain signal shows (reported once), or `stop()`. */
export class DrainWatcher {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private failing = false;

  constructor(private readonly o: DrainWatcherOptions) {}

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.poll(), this.o.pollMs);
  }

  private async poll(): Promise<void> {
    try {
      const reason = await readDrainSignal(this.o.metadata);
      if (this.failing) logStep(this.o.logger, "info", "metadata_readable");
      this.failing = false;
      if (reason !== undefined && !this.stopped) {
        this.stopped = true;
        this.o.onSignal(reason);
        return;
      }
    } catch (error) {
      // Logged once per outage, not every poll: the next poll tries again.
      if (!this.failing) logStep(this.o.logger, "warn", "metadata_unreadable", { error: errorMessage(error) });
      this.failing = true;
    }
    this.schedule();
  }
}

export interface CompleteOptions {
  autoScaling: AutoScalingClient;
  instanceId: string;
  fleet: FleetDrain;
  logger: StepLogger;
  sleep: (ms: number) => Promise<void>;
  /** The pause before the first retry; doubling up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Checked before each retry: false stops (a SIGTERM drain with no lifecycle action to complete). */
  continueWhile?: () => boolean;
}

/**
 * No lifecycle action is waiting for this instance (yet): the drain started on the target state or
 * a notice before Auto Scaling put the instance in Terminating:Wait, or there is none at all.
 */
export function isNoActiveLifecycleAction(error: unknown): boolean {
  return error instanceof Error && error.name === "ValidationError";
}

/**
 * Completes this instance's terminate lifecycle action (CONTINUE), so the group terminates it now
 * rather than at the hook's timeout. Retried while AWS answers ValidationError (no action is active
 * yet: the drain can finish before the hook takes hold) and after any other failure, until it
 * succeeds or `continueWhile` says stop. Answers whether it completed.
 */
export async function completeLifecycleAction(o: CompleteOptions): Promise<boolean> {
  const base = o.baseDelayMs ?? 1000;
  const max = o.maxDelayMs ?? 15_000;
  for (let attempt = 1; ; attempt++) {
    try {
      await o.autoScaling.send(
        new CompleteLifecycleActionCommand({
          AutoScalingGroupName: o.fleet.groupName,
          LifecycleHookName: o.fleet.hookName,
          InstanceId: o.instanceId,
          LifecycleActionResult: "CONTINUE",
        }),
      );
      logStep(o.logger, "info", "lifecycle_completed", { instanceId: o.instanceId, group: o.fleet.groupName, hook: o.fleet.hookName, attempts: attempt });
      return true;
    } catch (error) {
      const waiting = isNoActiveLifecycleAction(error);
      logStep(o.logger, waiting ? "info" : "warn", waiting ? "lifecycle_not_active" : "lifecycle_complete_failed", { attempt, error: errorMessage(error) });
      await o.sleep(Math.min(base * 2 ** (attempt - 1), max));
      if (o.continueWhile && !o.continueWhile()) return false;
    }
  }
}
