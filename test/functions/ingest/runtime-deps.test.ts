import { EC2Client } from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { parseDlqConfig, parseIdleConfig, parseWindowConfig } from "../../../functions/ingest/config";
import { gpuServiceUrlFor } from "../../../functions/ingest/deliver-window";
import { runtimeClients, runtimeDeps } from "../../../functions/ingest/runtime-deps";
import { sampleEnv } from "../helpers/env-samples";

const ENV = {
  ...sampleEnv("ingest GPU idle"),
  ...sampleEnv("ingest DLQ consumer"),
  ...sampleEnv("ingest window"),
  GPU_SERVICE_PORT: "8080",
  GPU_SERVICE_PATH: "/ingest/window",
  GPU_IDLE_STOP_MINUTES: "30",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-quarantine",
  INGEST_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest",
  INGEST_DLQ_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq",
};

describe("ingest runtime wiring", () => {
  it("posts windows to http://<the GPU's private IP>:<service port><service path>", () => {
    expect(gpuServiceUrlFor({ servicePort: 8080, servicePath: "/ingest/window" })("10.0.3.7")).to.equal("http://10.0.3.7:8080/ingest/window");
  });

  it("runs with the real AWS clients, the platform's fetch and the config it was given", async () => {
    const config = { any: "config" };

    const deps = runtimeClients(config);

    expect(deps.ssm).to.be.instanceOf(SSMClient);
    expect(deps.ec2).to.be.instanceOf(EC2Client);
    expect(deps.sqs).to.be.instanceOf(SQSClient);
    expect(deps.config).to.equal(config);
    expect(deps.logger.info).to.be.a("function");
    expect(deps.metrics.publishStoredMetrics).to.be.a("function");
    // A data: URL needs no network: the wrapper hands URL and init to fetch and returns its answer.
    expect(await (await deps.fetch("data:text/plain,hello", { method: "GET" })).text()).to.equal("hello");
  });

  it("gives the consumers the service URL built from their config", () => {
    const deps = runtimeDeps(parseWindowConfig(ENV));

    expect(deps.gpuServiceUrl("10.0.0.1")).to.equal("http://10.0.0.1:8080/ingest/window");
    expect(deps.config.ingestQueueUrl).to.equal(ENV.INGEST_QUEUE_URL);
  });

  describe("each entry's defaultDeps reads the environment it is given", () => {
    const saved = { ...process.env };
    // The entries build their handler from process.env when first loaded, as Lambda does.
    before(() => Object.assign(process.env, ENV));
    after(() => {
      for (const name of Object.keys(ENV)) if (!(name in saved)) delete process.env[name];
    });

    const entries: Array<[string, () => Promise<{ defaultDeps(env: NodeJS.ProcessEnv): { config: unknown } }>, (env: NodeJS.ProcessEnv) => unknown]> = [
      ["window.ts", () => import("../../../functions/ingest/window.js"), parseWindowConfig],
      ["dlq.ts", () => import("../../../functions/ingest/dlq.js"), parseDlqConfig],
      ["idle.ts", () => import("../../../functions/gpu/idle.js"), parseIdleConfig],
    ];
    for (const [name, load, parse] of entries) {
      it(`${name}: its deps carry the config parsed from that environment`, async () => {
        const env = { ...ENV, GPU_SERVICE_PORT: "9090" };

        const deps = (await load()).defaultDeps(env);

        expect(deps.config).to.deep.equal(parse(env));
      });
    }
  });
});
