/**
 * One local GPU instance's instance metadata service (IMDSv2), on a free loopback port: what the
 * gateway on the instance reads to learn that it must drain (functions/gpu/gateway.ts). The gateway
 * gets its address as `AWS_EC2_METADATA_SERVICE_ENDPOINT`, the override the AWS SDK honours.
 * Kept of EC2's behaviour (the EC2 user guide, "Use IMDSv2", "Instance metadata categories"):
 * - `PUT /latest/api/token` with `X-aws-ec2-metadata-token-ttl-seconds` (1–21600) answers a token;
 *   without the header, 400. A GET without a valid token: 401.
 * - `instance-id`; `autoscaling/target-lifecycle-state` (`InService` until the group lets the
 *   instance go, then `Terminated`); `spot/instance-action` and `events/recommendations/rebalance`,
 *   404 until EC2 sends the notice or the recommendation; anything else 404.
 * moto has no metadata service; the fleet stand-in (local/hosts/gpu-fleet.ts) sets the state.
 */
import { randomUUID } from "node:crypto";
import type * as http from "node:http";
import { LoopbackServer } from "../hosts/loopback";

const TTL_HEADER = "x-aws-ec2-metadata-token-ttl-seconds";
const TOKEN_HEADER = "x-aws-ec2-metadata-token";

export class InstanceMetadata {
  private readonly server = new LoopbackServer((req, res) => this.handle(req, res));
  /** Token → real epoch ms it expires at. */
  private readonly tokens = new Map<string, number>();
  targetLifecycleState: "InService" | "Terminated" = "InService";
  /** The Spot interruption notice's body, once EC2 sent one. */
  spotAction?: { action: "terminate" | "stop" | "hibernate"; time: string };
  /** The rebalance recommendation's body, once EC2 sent one. */
  rebalance?: { noticeTime: string };

  constructor(readonly instanceId: string) {}

  /** Listens on a free loopback port; resolves to its base URL (the endpoint the gateway is given). */
  async start(): Promise<string> {
    const { host, port } = await this.server.start();
    return `http://${host}:${port}`;
  }

  stop(): Promise<void> {
    return this.server.close();
  }

  /** EC2's two-minute notice: the action and when it happens (ISO 8601, seconds). */
  noticeSpotInterruption(atMs: number): void {
    this.spotAction = { action: "terminate", time: new Date(atMs).toISOString().replace(/\.\d{3}Z$/, "Z") };
  }

  recommendRebalance(nowMs = Date.now()): void {
    this.rebalance = { noticeTime: new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z") };
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    req.resume();
    const path = new URL(req.url ?? "/", "http://169.254.169.254").pathname;
    if (req.method === "PUT" && path === "/latest/api/token") {
      const ttl = Number(req.headers[TTL_HEADER]);
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > 21_600) return text(res, 400, "");
      const token = randomUUID();
      this.tokens.set(token, Date.now() + ttl * 1000);
      return text(res, 200, token, { [TTL_HEADER]: String(ttl) });
    }
    if (req.method !== "GET") return text(res, 405, "");
    const token = req.headers[TOKEN_HEADER];
    if (typeof token !== "string" || (this.tokens.get(token) ?? 0) < Date.now()) return text(res, 401, "");
    const body = this.read(path.replace(/^\/latest\/meta-data\//, ""));
    if (body === undefined) return text(res, 404, "");
    text(res, 200, body);
  }

  private read(item: string): string | undefined {
    switch (item) {
      case "instance-id":
        return this.instanceId;
      case "autoscaling/target-lifecycle-state":
        return this.targetLifecycleState;
      case "spot/instance-action":
        return this.spotAction && JSON.stringify(this.spotAction);
      case "events/recommendations/rebalance":
        return this.rebalance && JSON.stringify(this.rebalance);
      default:
        return undefined;
    }
  }
}

function text(res: http.ServerResponse, status: number, body: string, headers: http.OutgoingHttpHeaders = {}): void {
  res.writeHead(status, { "content-type": "text/plain", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}
