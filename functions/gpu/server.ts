import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { DEFAULT_RESEND, type ResendPolicy } from "../shared/resend";
import type { GatewayConfig } from "./config";
import { completeLifecycleAction, type DrainReason, DrainWatcher, type MetadataReader } from "./drain";
import { type Claim, dynamoKeyStore, KeyClaims } from "./keys";
import { type FetchFn, Limiter, ModelClient } from "./model";

/** The largest window body the gateway reads; the consumers send far less (one window of events). */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** How long the status check waits for the model's health path: well inside the load balancer's health check timeout. */
export const HEALTH_TIMEOUT_MS = 2000;

/**
 * After SIGTERM, how long the gateway keeps trying to complete a lifecycle action before it exits
 * anyway: a SIGTERM with no terminate hook waiting (a reboot, a service restart) must not hold the
 * process until systemd kills it.
 */
export const SIGTERM_COMPLETE_MS = 30_000;

/** How long `stop()` lets open connections finish before it closes them. */
export const STOP_GRACE_MS = 5000;

export interface GatewayDeps {
  config: GatewayConfig;
  db: DynamoDBDocumentClient;
  autoScaling: AutoScalingClient;
  metadata: MetadataReader;
  /** This instance's id (IMDS `instance-id`): the claims' holder and the lifecycle action's instance. */
  instanceId: string;
  fetch: FetchFn;
  logger: StepLogger;
  metrics: MetricsSink;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  newToken?: () => string;
  resend?: ResendPolicy;
  healthTimeoutMs?: number;
  sigtermCompleteMs?: number;
}

export interface GatewayStatus {
  /** Windows held: claiming, waiting for a model slot, or at the model. */
  active: number;
  /** Seconds since the last window arrived or finished (or since start); 0 while any is active. */
  idleSeconds: number;
  draining: boolean;
}

export interface Gateway {
  /** The node:http request handler. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** Listens (default: the service port on 0.0.0.0) and starts watching for a drain; answers the bound port. */
  start(listen?: { port?: number; host?: string }): Promise<number>;
  /** Stops watching, stops any lifecycle retries, closes the listener. */
  stop(): Promise<void>;
  /** Drains (idempotent): new windows 503, status 503, wait for active 0, then complete the lifecycle action in fleet mode. */
  drain(reason: DrainReason): Promise<void>;
  status(): GatewayStatus;
}

type Reply = { status: number; body: string; headers?: Record<string, string> };

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => ({
  status,
  body: JSON.stringify(body),
  headers: { "content-type": "application/json", ...headers },
});

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BodyTooLarge());
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

export function createGateway(deps: GatewayDeps): Gateway {
  const { config, logger, metrics } = deps;
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const keys = new KeyClaims({
    store: dynamoKeyStore(deps.db, config.keysTable),
    holder: deps.instanceId,
    leaseMs: config.keyLeaseMs,
    now,
    newToken: deps.newToken,
    resend: deps.resend ?? { ...DEFAULT_RESEND, sleep },
  });
  const limiter = new Limiter(config.modelConcurrency);
  const model = new ModelClient({
    baseUrl: config.modelUrl,
    path: config.modelPath,
    healthPath: config.modelHealthPath,
    timeoutMs: config.modelTimeoutMs,
    healthTimeoutMs: deps.healthTimeoutMs ?? HEALTH_TIMEOUT_MS,
    fetch: deps.fetch,
  });

  /** Keys this gateway is answering now: a second request for one is 409 before any write. */
  const inFlight = new Set<string>();
  let active = 0;
  let lastActivity = now();
  let idleWaiters: Array<() => void> = [];
  let draining: Promise<void> | undefined;
  let drainReason: DrainReason | undefined;
  let sigtermAt: number | undefined;
  let stopped = false;
  let server: Server | undefined;

  // Published only when something was counted: Powertools warns on every empty publish (a status check).
  let counted = false;
  const count = (name: string) => {
    counted = true;
    countOne(metrics, name);
  };
  const publish = () => {
    if (!counted) return;
    counted = false;
    metrics.publishStoredMetrics();
  };

  const watcher = new DrainWatcher({
    metadata: deps.metadata,
    pollMs: config.drainPollMs,
    logger,
    onSignal: (reason) => void drain(reason),
  });

  const status = (): GatewayStatus => ({
    active,
    idleSeconds: active > 0 ? 0 : Math.max(0, Math.round(now() - lastActivity)) / 1000,
    draining: draining !== undefined,
  });

  const finished = () => {
    lastActivity = now();
    if (active === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    }
  };

  const whenIdle = () => (active === 0 ? Promise.resolve() : new Promise<void>((r) => idleWaiters.push(r)));

  /** Gives the key back after a model failure; a failure to is logged (the lease runs out instead). */
  async function releaseKey(claim: Claim, why: string): Promise<void> {
    try {
      const out = await keys.release(claim);
      logStep(logger, out.kind === "released" ? "info" : "warn", out.kind === "released" ? "key_released" : "key_release_lost", {
        key: claim.key,
        why,
        ...(out.kind === "lost" ? { holder: out.holder, state: out.state } : {}),
      });
    } catch (error) {
      logStep(logger, "error", "key_release_failed", { key: claim.key, why, error: errorMessage(error) });
      count("KeyStoreFailed");
    }
  }

  /** One claimed window: a model slot, the model, then the key marked done or released. */
  async function runClaimed(claim: Claim, claimedAt: number, body: string, contentType: string): Promise<Reply> {
    const releaseSlot = await limiter.acquire();
    // A drain that began while this window waited for a slot hands it back rather than running it:
    // a Spot notice leaves two minutes, and a backlog queued here would outlast them and be cut off
    // mid-run. Only the windows already at the model finish; the rest return through SQS to another
    // instance, their keys released so that instance may take them at once. The drain turns every
    // waiter away in one tick (`limiter.turnAway`), so the hand-backs run side by side.
    if (releaseSlot === undefined || draining !== undefined) {
      releaseSlot?.();
      await releaseKey(claim, "draining");
      logStep(logger, "info", "window_handed_back", { key: claim.key });
      count("WindowHandedBack");
      return json(503, { error: "draining" });
    }
    try {
      // A window that waited for its slot may have too little lease left to cover the model's timeout.
      if (claimedAt + config.keyLeaseMs - now() < config.modelTimeoutMs) {
        let extended: boolean;
        try {
          extended = await keys.extend(claim);
        } catch (error) {
          logStep(logger, "error", "key_store_failed", { key: claim.key, op: "extend", error: errorMessage(error) });
          count("KeyStoreFailed");
          await releaseKey(claim, "key_store_failed");
          return json(503, { error: "key store unavailable" });
        }
        if (!extended) {
          logStep(logger, "warn", "window_conflict", { key: claim.key, why: "lease taken over while waiting for the model" });
          count("WindowConflict");
          return json(409, { error: "window in progress elsewhere" });
        }
      }
      const started = now();
      const answer = await model.post(body, claim.key, contentType);
      const ms = now() - started;
      if (answer.kind === "answered" && answer.status >= 200 && answer.status < 300) {
        try {
          const done = await keys.markDone(claim, answer.status, answer.body);
          if (done.kind === "done")
            logStep(logger, "info", "window_done", { key: claim.key, status: answer.status, ms, stored: done.stored, recovered: done.recovered });
          else logStep(logger, "warn", "window_done_refused", { key: claim.key, holder: done.holder, state: done.state, ms });
        } catch (error) {
          // The model has answered: the window is served whatever the table says, so the answer stands;
          // the claim stays until its lease runs out, and a later copy of the window may run it again.
          logStep(logger, "error", "window_done_unrecorded", { key: claim.key, error: errorMessage(error) });
          count("KeyStoreFailed");
        }
        count("WindowDone");
        return { status: 200, body: answer.body, headers: { "content-type": answer.contentType ?? "application/json" } };
      }
      const failure =
        answer.kind === "answered" ? { modelStatus: answer.status, body: answer.body.slice(0, 200) } : { reason: answer.reason, error: answer.error };
      logStep(logger, "warn", "model_failed", { key: claim.key, ms, ...failure });
      count("ModelFailed");
      await releaseKey(claim, "model_failed");
      if (answer.kind === "answered" && answer.status >= 400 && answer.status < 500)
        return { status: answer.status, body: answer.body, headers: { "content-type": answer.contentType ?? "application/json" } };
      return json(502, { error: "model failed", ...failure });
    } finally {
      releaseSlot();
    }
  }

  async function window(req: IncomingMessage, res: ServerResponse): Promise<Reply> {
    if (draining) return json(503, { error: "draining" });
    const header = req.headers["idempotency-key"];
    const key = (Array.isArray(header) ? header[0] : header)?.trim();
    let body: string;
    try {
      body = await readBody(req);
    } catch (error) {
      if (error instanceof BodyTooLarge) return json(413, { error: `body over ${MAX_BODY_BYTES} bytes` });
      throw error;
    }
    if (!key) return json(400, { error: "Idempotency-Key header is required" });
    if (!isJson(body)) return json(400, { error: "body must be JSON" });
    if (draining) return json(503, { error: "draining" });
    if (inFlight.has(key)) {
      logStep(logger, "info", "window_conflict", { key, holder: deps.instanceId, here: true });
      count("WindowConflict");
      return json(409, { error: "window in progress on this instance" });
    }
    inFlight.add(key);
    active++;
    lastActivity = now();
    // The window is held until its work is done AND its answer is sent (or its client gone): a drain
    // that ended at the work's end could close the listener before the last answer left.
    let holds = 2;
    const release = () => {
      if (--holds > 0) return;
      inFlight.delete(key);
      active--;
      finished();
    };
    let sent = false;
    const onSent = () => {
      if (sent) return;
      sent = true;
      release();
    };
    res.once("finish", onSent);
    res.once("close", onSent);
    try {
      const claimedAt = now();
      let claimed: Awaited<ReturnType<KeyClaims["claim"]>>;
      try {
        claimed = await keys.claim(key);
      } catch (error) {
        logStep(logger, "error", "key_store_failed", { key, op: "claim", error: errorMessage(error) });
        count("KeyStoreFailed");
        return json(503, { error: "key store unavailable" });
      }
      if (claimed.kind === "done") {
        logStep(logger, "info", "window_repeat", { key, holder: claimed.holder });
        count("WindowRepeat");
        return { status: 200, body: claimed.response ?? "", headers: { "content-type": "application/json", "idempotency-replayed": "true" } };
      }
      if (claimed.kind === "held") {
        logStep(logger, "info", "window_conflict", { key, holder: claimed.holder, leaseExpiresAt: claimed.leaseExpiresAt });
        count("WindowConflict");
        return json(409, { error: "window in progress elsewhere", holder: claimed.holder });
      }
      logStep(logger, "info", "window_claimed", { key, recovered: claimed.recovered, waiting: limiter.waiting, atModel: limiter.active });
      count("WindowClaimed");
      const ct = req.headers["content-type"] ?? "application/json";
      return await runClaimed(claimed.claim, claimedAt, body, ct);
    } finally {
      release();
    }
  }

  async function statusReply(): Promise<Reply> {
    const healthy = draining === undefined && (await model.healthy());
    // Read after the health check: `active` may have moved while it ran.
    return json(healthy && draining === undefined ? 200 : 503, status());
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<Reply> {
    const path = (req.url ?? "/").split("?")[0];
    if (path === config.servicePath) return req.method === "POST" ? window(req, res) : json(405, { error: "POST only" }, { allow: "POST" });
    if (path === config.statusPath) return req.method === "GET" || req.method === "HEAD" ? statusReply() : json(405, { error: "GET only" }, { allow: "GET" });
    return json(404, { error: "not found" });
  }

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    route(req, res)
      .catch((error: unknown): Reply => {
        logStep(logger, "error", "request_failed", { url: req.url, error: errorMessage(error) });
        return json(500, { error: "internal error" });
      })
      .then((reply) => {
        publish();
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body);
      })
      .catch(() => undefined); // the client went away
  };

  function drain(reason: DrainReason): Promise<void> {
    if (reason === "SIGTERM") sigtermAt ??= now();
    if (draining) return draining;
    drainReason = reason;
    watcher.stop();
    logStep(logger, "info", "drain_started", { reason, active, waiting: limiter.waiting });
    count("DrainStarted");
    publish();
    draining = (async () => {
      limiter.turnAway();
      await whenIdle();
      logStep(logger, "info", "drain_done", { reason: drainReason });
      if (config.fleet === undefined) return;
      const sigtermMs = deps.sigtermCompleteMs ?? SIGTERM_COMPLETE_MS;
      const completed = await completeLifecycleAction({
        autoScaling: deps.autoScaling,
        instanceId: deps.instanceId,
        fleet: config.fleet,
        logger,
        sleep,
        continueWhile: () => !stopped && (sigtermAt === undefined || now() - sigtermAt < sigtermMs),
      });
      if (!completed) logStep(logger, "warn", "lifecycle_not_completed", { reason: drainReason });
    })();
    return draining;
  }

  return {
    handler,
    status,
    drain,
    async start(listen = {}) {
      server = createServer(handler);
      const s = server;
      await new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(listen.port ?? config.servicePort, listen.host ?? "0.0.0.0", () => resolve());
      });
      watcher.start();
      const port = (s.address() as AddressInfo).port;
      logStep(logger, "info", "gateway_started", { port, instanceId: deps.instanceId, fleet: config.fleet !== undefined });
      return port;
    },
    async stop() {
      stopped = true;
      watcher.stop();
      const s = server;
      server = undefined;
      if (!s) return;
      // Answers being written finish; idle keep-alive connections close now, any other after a grace.
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      s.closeIdleConnections();
      const force = setTimeout(() => s.closeAllConnections(), STOP_GRACE_MS);
      force.unref();
      await closed;
      clearTimeout(force);
    },
  };
}
