/**
 * One local GPU instance's instance metadata service (IMDSv2) on a free loopback port: what its
 * gateway reads to learn that it must drain (functions/gpu/drain.ts), given as
 * `AWS_EC2_METADATA_SERVICE_ENDPOINT`, the override the AWS SDK honours. As EC2's (the EC2 user guide,
 * "Use IMDSv2", "Instance metadata categories"): `PUT /latest/api/token` with
 * `X-aws-ec2-metadata-token-ttl-seconds` (1–21600) answers a token, else 400; a GET without a valid
 * token gets 401. It serves `instance-id`, `autoscaling/target-lifecycle-state` (`InService` until the
 * group lets the instance go, then `Terminated`), and `spot/instance-action` and
 * `events/recommendations/rebalance`, 404 until EC2 sends them. moto has none; the fleet stand-in
 * (local/hosts/gpu-fleet.ts) sets the state.
 */
import { randomUUID } from "node:crypto";
import type * as http from "node:http";
import { LoopbackServer } from "./loopback";

export class InstanceMetadata {
  private readonly server = new LoopbackServer((req, res) => this.handle(req, res));
  /** Token → real epoch ms it expires at. */
  private readonly tokens = new Map<string, number>();
  targetLifecycleState: "InService" | "Terminated" = "InService";
  private spotAction?: string;
  private rebalance?: string;

  constructor(readonly instanceId: string) {}

  /** Listens on a free loopback port; resolves to its base URL. */
  async start(): Promise<string> {
    const { host, port } = await this.server.start();
    return `http://${host}:${port}`;
  }

  readonly stop = (): Promise<void> => this.server.close();

  /** EC2's two-minute notice: the action and when it happens (EC2's times are ISO 8601 to the second). */
  noticeSpotInterruption(atMs: number): void {
    this.spotAction = JSON.stringify({ action: "terminate", time: new Date(atMs).toISOString().replace(/\.\d{3}Z$/, "Z") });
  }

  recommendRebalance(nowMs = Date.now()): void {
    this.rebalance = JSON.stringify({ noticeTime: new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z") });
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    req.resume();
    const path = new URL(req.url ?? "/", "http://169.254.169.254").pathname;
    const answer = (status: number, body = "", headers: http.OutgoingHttpHeaders = {}) => {
      res.writeHead(status, { "content-type": "text/plain", "content-length": Buffer.byteLength(body), ...headers });
      res.end(body);
    };
    if (req.method === "PUT" && path === "/latest/api/token") {
      const ttl = Number(req.headers["x-aws-ec2-metadata-token-ttl-seconds"]);
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > 21_600) return answer(400);
      const token = randomUUID();
      this.tokens.set(token, Date.now() + ttl * 1000);
      return answer(200, token, { "x-aws-ec2-metadata-token-ttl-seconds": String(ttl) });
    }
    const token = req.headers["x-aws-ec2-metadata-token"];
    if (typeof token !== "string" || (this.tokens.get(token) ?? 0) < Date.now()) return answer(401);
    const items: Record<string, string | undefined> = {
      "instance-id": this.instanceId,
      "autoscaling/target-lifecycle-state": this.targetLifecycleState,
      "spot/instance-action": this.spotAction,
      "events/recommendations/rebalance": this.rebalance,
    };
    const body = items[path.replace(/^\/latest\/meta-data\//, "")];
    if (body === undefined) answer(404);
    else answer(200, body);
  }
}
