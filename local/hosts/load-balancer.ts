/**
 * The internal Application Load Balancer in front of the GPU fleet, played on a loopback port (moto
 * stores load balancers but forwards nothing, and keeps terminated targets registered). What it
 * keeps of ALB's documented behaviour:
 * - Targets are the group's in-service instances (the group registers and deregisters them).
 * - A new target is `initial` and gets no request until it passed `healthyThreshold` health checks
 *   in a row (GET the status path, every `intervalSeconds`, within `timeoutSeconds`, 200 only);
 *   `unhealthyThreshold` failures in a row make it `unhealthy`, and it gets none until healthy again.
 * - Routing is least outstanding requests (the target group's algorithm) among healthy targets.
 * - A deregistered target is `draining`: no new request, its in-flight ones finish (the caller of
 *   `deregister` decides how long it may take: the deregistration delay).
 * - No healthy target: 503, as ALB answers (its fail-open, all targets unhealthy routed anyway, is not played).
 * All times are simulated, converted at the platform's speed, but a check's timeout is at least a real
 * second: the targets are real processes (the gateways), whose answers take real time.
 */
import * as http from "node:http";
import { LoopbackServer, replyJson } from "../aws/loopback";

export type TargetHealth = "initial" | "healthy" | "unhealthy" | "draining";

export interface HealthCheck {
  path: string;
  intervalSeconds: number;
  timeoutSeconds: number;
  healthyThreshold: number;
  unhealthyThreshold: number;
}

interface Target {
  id: string;
  port: number;
  health: TargetHealth;
  okInARow: number;
  failedInARow: number;
  outstanding: number;
  timer?: NodeJS.Timeout;
}

/** Pure: ALB's least-outstanding-requests pick among healthy targets (ties: the first registered). */
export function pickTarget<T extends { health: TargetHealth; outstanding: number }>(targets: readonly T[]): T | undefined {
  let best: T | undefined;
  for (const t of targets) if (t.health === "healthy" && (best === undefined || t.outstanding < best.outstanding)) best = t;
  return best;
}

/** Pure: a target's health after one check, by the thresholds. Draining targets are not checked. */
export function afterCheck(
  t: { health: TargetHealth; okInARow: number; failedInARow: number },
  ok: boolean,
  hc: Pick<HealthCheck, "healthyThreshold" | "unhealthyThreshold">,
): { health: TargetHealth; okInARow: number; failedInARow: number } {
  if (t.health === "draining") return t;
  const okInARow = ok ? t.okInARow + 1 : 0;
  const failedInARow = ok ? 0 : t.failedInARow + 1;
  let health = t.health;
  if (okInARow >= hc.healthyThreshold) health = "healthy";
  else if (failedInARow >= hc.unhealthyThreshold && t.health === "healthy") health = "unhealthy";
  return { health, okInARow, failedInARow };
}

export class LocalLoadBalancer {
  private readonly server = new LoopbackServer((req, res) => this.forward(req, res));
  private readonly targets = new Map<string, Target>();
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  private refused = 0;

  constructor(private readonly opts: { healthCheck: HealthCheck; speed: number }) {}

  readonly start = (): Promise<{ host: string; port: number }> => this.server.start();

  async stop(): Promise<void> {
    for (const t of this.targets.values()) clearTimeout(t.timer);
    this.targets.clear();
    this.agent.destroy();
    await this.server.close();
  }

  /** Registers an instance's service; it gets requests once its health checks pass. */
  register(id: string, port: number): void {
    if (this.targets.has(id)) return;
    const target: Target = { id, port, health: "initial", okInARow: 0, failedInARow: 0, outstanding: 0 };
    this.targets.set(id, target);
    target.timer = setTimeout(() => void this.check(target), 0).unref();
  }

  /** Stops new requests to the target at once (and its health checks); its in-flight ones finish. */
  deregister(id: string): void {
    const t = this.targets.get(id);
    if (t) t.health = "draining";
  }

  /** Forgets a drained target. */
  remove(id: string): void {
    const t = this.targets.get(id);
    if (t) clearTimeout(t.timer);
    this.targets.delete(id);
  }

  readonly health = (id: string): TargetHealth | undefined => this.targets.get(id)?.health;
  /** Requests in flight through the load balancer to this target. */
  readonly outstanding = (id: string): number => this.targets.get(id)?.outstanding ?? 0;
  readonly healthyCount = (): number => [...this.targets.values()].filter((t) => t.health === "healthy").length;
  /** Requests answered 503 because no target was healthy. */
  readonly refusedRequests = (): number => this.refused;

  private async check(t: Target): Promise<void> {
    if (this.targets.get(t.id) !== t || t.health === "draining") return;
    const hc = this.opts.healthCheck;
    const ok = await new Promise<boolean>((done) => {
      const req = http.get(
        { host: "127.0.0.1", port: t.port, path: hc.path, agent: false, timeout: Math.max(1000, (hc.timeoutSeconds * 1000) / this.opts.speed) },
        (res) => {
          res.resume();
          done(res.statusCode === 200);
        },
      );
      req.on("timeout", () => req.destroy());
      req.on("error", () => done(false));
    });
    // Read again after the wait: the target may have been deregistered meanwhile.
    if (this.targets.get(t.id) !== t || (t.health as TargetHealth) === "draining") return;
    Object.assign(t, afterCheck(t, ok, hc));
    t.timer = setTimeout(() => void this.check(t), (hc.intervalSeconds * 1000) / this.opts.speed).unref();
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const target = pickTarget([...this.targets.values()]);
    if (!target) {
      req.resume();
      this.refused += 1;
      replyJson(res, 503, { error: "503 Service Temporarily Unavailable: no healthy target" });
      return;
    }
    target.outstanding += 1;
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      target.outstanding -= 1;
    };
    const upstream = http.request(
      { host: "127.0.0.1", port: target.port, method: req.method, path: req.url, headers: req.headers, agent: this.agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on("end", done);
        answer.on("error", () => {
          done();
          res.destroy();
        });
      },
    );
    // The target went away mid-request (its instance was terminated or reclaimed): ALB answers 502.
    upstream.on("error", () => {
      done();
      if (!res.headersSent) replyJson(res, 502, { error: "502 Bad Gateway: the target closed the connection" });
      else res.destroy();
    });
    req.pipe(upstream);
  }
}
