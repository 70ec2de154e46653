import { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import { mockClient } from "aws-sdk-client-mock";
import type { GatewayConfig } from "../../../functions/gpu/config";
import type { MetadataAnswer, MetadataReader } from "../../../functions/gpu/drain";
import { createGateway, type Gateway, type GatewayDeps } from "../../../functions/gpu/server";
import { httpFetch } from "./fake-time";
import { FakeModel, httpCall, type HttpAnswer } from "./fake-model";
import { FakeKeyTable } from "./gpu-key-table";
import { RecordingLogger, RecordingMetrics } from "./telemetry";

/** Instance metadata as the tests set it: every path 404 until given an answer; `down` fails every read. */
export class FakeMetadata implements MetadataReader {
  readonly answers = new Map<string, MetadataAnswer>();
  down = false;
  reads = 0;

  get(path: string): Promise<MetadataAnswer> {
    this.reads++;
    if (this.down) return Promise.reject(new Error("connect EHOSTUNREACH 169.254.169.254:80"));
    return Promise.resolve(this.answers.get(path) ?? { status: 404, body: "" });
  }
}

export const INSTANCE_ID = "i-0123456789abcdef0";

export function testGatewayConfig(modelUrl: string, over: Partial<GatewayConfig> = {}): GatewayConfig {
  return {
    servicePort: 0,
    servicePath: "/windows",
    statusPath: "/status",
    modelUrl,
    modelPath: "/infer",
    modelHealthPath: "/health",
    modelConcurrency: 2,
    modelTimeoutMs: 5000,
    keysTable: "gpu-keys",
    keyLeaseMs: 60_000,
    drainPollMs: 1000,
    fleet: undefined,
    ...over,
  };
}

export const FLEET = { groupName: "encache-gpu-prod", hookName: "drain" } as const;

/** A gateway on 127.0.0.1 in front of a fake model, its key table and Auto Scaling mocked, its metadata fake. */
export class GatewayHarness {
  readonly model = new FakeModel();
  readonly table = new FakeKeyTable();
  readonly autoScaling = new AutoScalingClient({ region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } });
  readonly asgMock = mockClient(this.autoScaling);
  readonly metadata = new FakeMetadata();
  readonly logger = new RecordingLogger();
  readonly metrics = new RecordingMetrics();
  gateway!: Gateway;
  port = 0;

  async start(config: Partial<GatewayConfig> = {}, deps: Partial<GatewayDeps> = {}): Promise<this> {
    await this.model.start();
    let n = 0;
    this.gateway = createGateway({
      config: testGatewayConfig(this.model.url, config),
      db: this.table.db,
      autoScaling: this.autoScaling,
      metadata: this.metadata,
      instanceId: INSTANCE_ID,
      fetch: httpFetch,
      logger: this.logger,
      metrics: this.metrics,
      newToken: () => `token-${++n}`,
      ...deps,
    });
    this.port = await this.gateway.start({ port: 0, host: "127.0.0.1" });
    return this;
  }

  async stop(): Promise<void> {
    await this.gateway?.stop();
    await this.model.stop();
  }

  /** POSTs a window (JSON body, the given Idempotency-Key; none when `key` is undefined). */
  post(key: string | undefined, body = JSON.stringify({ window: key })): Promise<HttpAnswer> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (key !== undefined) headers["idempotency-key"] = key;
    return httpCall(`http://127.0.0.1:${this.port}/windows`, { method: "POST", headers, body });
  }

  status(): Promise<HttpAnswer> {
    return httpCall(`http://127.0.0.1:${this.port}/status`);
  }
}
