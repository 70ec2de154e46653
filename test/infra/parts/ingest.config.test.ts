import { expect } from "chai";
import { gpuConfigSchema, ingestConfigProblems, ingestConfigSchema } from "../../../infra/parts/ingest.config";
import { devConfig, scopedStackConfig } from "../helpers/stack-config";

type IngestInput = Parameters<typeof ingestConfigProblems>[0];

/** A consistent part-1 config: 6 × 30 s ≤ 180 s on both queues. */
function ingest(overrides: Partial<IngestInput> = {}): IngestInput {
  const consumer = { timeoutSeconds: 30, memoryMb: 256, batchSize: 10, batchingWindowSeconds: 0, maxConcurrency: 2 };
  return {
    queueVisibilityTimeoutSeconds: 180,
    dlqVisibilityTimeoutSeconds: 180,
    messageRetentionSeconds: 345_600,
    window: consumer,
    dlqConsumer: { ...consumer, batchingWindowSeconds: 0 },
    ...overrides,
  };
}

describe("ingest stack config (infra/parts/ingest.config.ts)", () => {
  it("accepts the dev stack's encache:gpu and encache:ingest, with the stack's own GPU names", () => {
    // Act
    const gpu = gpuConfigSchema.parse(scopedStackConfig("dev").gpu);
    const part = ingestConfigSchema.parse(devConfig().ingest);

    // Assess
    expect(gpu).to.include({ nameTag: "encache-gpu-worker-dev", instanceIdParameter: "/encache/dev/gpu/instance_id" });
    expect(part.dlqParkSeconds).to.equal(900);
    expect(part.dlqConsumer.batchSize).to.equal(10);
  });

  it("finds nothing wrong with a consistent config", () => {
    expect(ingestConfigProblems(ingest())).to.deep.equal([]);
  });

  const cases: Array<{ title: string; overrides: Partial<IngestInput>; path: string; message: RegExp }> = [
    {
      title: "an ingest queue visibility below 6 × the window consumer's timeout",
      overrides: { queueVisibilityTimeoutSeconds: 179 },
      path: "queueVisibilityTimeoutSeconds",
      message: /at least 6 × ingest\.window\.timeoutSeconds \+ ingest\.window\.batchingWindowSeconds = 180 \(got 179\)/,
    },
    {
      title: "a DLQ visibility below 6 × the DLQ consumer's timeout",
      overrides: { dlqConsumer: { timeoutSeconds: 31, memoryMb: 256, batchSize: 10, batchingWindowSeconds: 0, maxConcurrency: 2 } },
      path: "dlqVisibilityTimeoutSeconds",
      message: /= 186 \(got 180\)/,
    },
    {
      title: "a batch above 10 without a batching window (Lambda's rule)",
      overrides: { window: { timeoutSeconds: 30, memoryMb: 256, batchSize: 11, batchingWindowSeconds: 0, maxConcurrency: 2 } },
      path: "window.batchingWindowSeconds",
      message: /must be > 0 when batchSize is above 10/,
    },
    {
      title: "a retention as long as the DLQ's 14 days",
      overrides: { messageRetentionSeconds: 1_209_600 },
      path: "messageRetentionSeconds",
      message: /must be below 14 days/,
    },
  ];
  for (const c of cases) {
    it(`reports ${c.title} at ${c.path}`, () => {
      // Act
      const problems = ingestConfigProblems(ingest(c.overrides));

      // Assess
      expect(problems).to.have.length(1);
      expect(problems[0]!.path.join(".")).to.equal(c.path);
      expect(problems[0]!.message).to.match(c.message);
    });
  }

  const dlqConsumerCases: Array<{ title: string; dlqConsumer: object; path: string; message: RegExp }> = [
    {
      title: "a DLQ consumer batch above 10 (one ChangeMessageVisibilityBatch parks a batch)",
      dlqConsumer: { timeoutSeconds: 30, batchSize: 11, maxConcurrency: 2 },
      path: "dlqConsumer.batchSize",
      message: /at most 10/,
    },
    {
      title: "a DLQ consumer batching window (it would hold returned messages back)",
      dlqConsumer: { timeoutSeconds: 30, batchSize: 10, batchingWindowSeconds: 5, maxConcurrency: 2 },
      path: "dlqConsumer.batchingWindowSeconds",
      message: /must be 0/,
    },
  ];
  for (const c of dlqConsumerCases) {
    it(`rejects ${c.title}`, () => {
      // Act
      const result = ingestConfigSchema.safeParse({ ...(devConfig().ingest as object), dlqConsumer: c.dlqConsumer });
      // Assess
      expect(result.success).to.equal(false);
      const issue = result.error!.issues.find((i) => i.path.join(".") === c.path);
      expect(issue?.message).to.match(c.message);
    });
  }
});

describe("encache:gpu: the model, the AMI and the drain (issue 35)", () => {
  const prodGpu = () => scopedStackConfig("prod").gpu as Record<string, unknown> & { capacity: { fleet: Record<string, unknown> } };
  const devGpu = () => scopedStackConfig("dev").gpu as Record<string, unknown>;
  const IMAGE = `123456789012.dkr.ecr.us-east-1.amazonaws.com/team/model@sha256:${"a".repeat(64)}`;
  const withFleet = (fleet: Record<string, unknown>) => {
    const gpu = prodGpu();
    return { ...gpu, capacity: { ...gpu.capacity, fleet: { ...gpu.capacity.fleet, ...fleet } } };
  };

  const accepted: Array<{ title: string; gpu: () => Record<string, unknown>; check: (g: ReturnType<typeof gpuConfigSchema.parse>) => void }> = [
    {
      title: "an image model, filling concurrency 1 and timeoutMs 9000",
      gpu: () => ({ ...devGpu(), model: { source: "image", image: IMAGE, port: 9000, path: "/v1/window", healthPath: "/health" } }),
      check: (g) =>
        expect(g.model).to.deep.equal({
          source: "image",
          image: IMAGE,
          port: 9000,
          path: "/v1/window",
          healthPath: "/health",
          concurrency: 1,
          timeoutMs: 9000,
        }),
    },
    {
      title: "a model the AMI starts (no image)",
      gpu: () => ({ ...devGpu(), model: { source: "ami", port: 9000, path: "/infer", healthPath: "/ping" } }),
      check: (g) => expect(g.model).to.deep.equal({ source: "ami", port: 9000, path: "/infer", healthPath: "/ping", concurrency: 1, timeoutMs: 9000 }),
    },
    { title: "an AMI id", gpu: () => ({ ...devGpu(), ami: "ami-0123456789abcdef0" }), check: (g) => expect(g.ami).to.equal("ami-0123456789abcdef0") },
    { title: "the account's own AMI parameter", gpu: () => ({ ...devGpu(), ami: "/team/gpu/ami" }), check: (g) => expect(g.ami).to.equal("/team/gpu/ami") },
    {
      title: "the former amiParameter, read as ami (a private parameter too, which it refused before)",
      gpu: () => ({ ...devGpu(), amiParameter: "/team/gpu/ami" }),
      check: (g) => expect(g.ami).to.equal("/team/gpu/ami"),
    },
    {
      title: "the Deep Learning AMI's public parameter when neither is set",
      gpu: devGpu,
      check: (g) => expect(g.ami).to.equal("/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"),
    },
    {
      title: "drainSeconds 30 (the hook's minimum)",
      gpu: () => withFleet({ drainSeconds: 30 }),
      check: (g) => expect(g.capacity.fleet?.drainSeconds).to.equal(30),
    },
    {
      title: "a drain above 110 on an on-demand fleet",
      gpu: () => withFleet({ spotPercent: 0, drainSeconds: 600 }),
      check: (g) => expect(g.capacity.fleet?.drainSeconds).to.equal(600),
    },
  ];
  for (const c of accepted) {
    it(`accepts ${c.title}`, () => {
      // Act
      const gpu = gpuConfigSchema.parse(c.gpu());
      // Assess
      c.check(gpu);
    });
  }

  const rejected: Array<{ title: string; gpu: () => Record<string, unknown>; path: string; message: RegExp }> = [
    {
      title: "drainSeconds 20 (AWS refuses a heartbeat timeout below 30 s)",
      gpu: () => withFleet({ drainSeconds: 20 }),
      path: "capacity.fleet.drainSeconds",
      message: /at least 30/,
    },
    {
      title: "a drain above 110 with Spot",
      gpu: () => withFleet({ spotPercent: 75, drainSeconds: 111 }),
      path: "capacity.fleet.drainSeconds",
      message: /at most 110 with Spot/,
    },
    {
      title: "a drain above the deregistration delay's 3600",
      gpu: () => withFleet({ spotPercent: 0, drainSeconds: 3601 }),
      path: "capacity.fleet.drainSeconds",
      message: /at most 3600/,
    },
    {
      title: "a model image not pinned by digest",
      gpu: () => ({
        ...devGpu(),
        model: { source: "image", image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/model:latest", port: 9000, path: "/", healthPath: "/h" },
      }),
      path: "model.image",
      message: /pinned by digest/,
    },
    {
      title: "a model image outside ECR",
      gpu: () => ({
        ...devGpu(),
        model: { source: "image", image: `docker.io/library/model@sha256:${"a".repeat(64)}`, port: 9000, path: "/", healthPath: "/h" },
      }),
      path: "model.image",
      message: /ECR image/,
    },
    {
      title: "an image model without its image",
      gpu: () => ({ ...devGpu(), model: { source: "image", port: 9000, path: "/", healthPath: "/h" } }),
      path: "model.image",
      message: /./,
    },
    {
      title: "a model on the service port",
      gpu: () => ({ ...devGpu(), model: { source: "ami", port: 8080, path: "/", healthPath: "/h" } }),
      path: "model.port",
      message: /must differ from gpu.servicePort \(8080\)/,
    },
    {
      title: "a model timeout as long as the consumer's POST",
      gpu: () => ({ ...devGpu(), model: { source: "ami", port: 9000, path: "/", healthPath: "/h", timeoutMs: 10_000 } }),
      path: "model.timeoutMs",
      message: /below gpu.requestTimeoutMs \(10000\)/,
    },
    {
      title: "an AMI that is neither an id nor a parameter",
      gpu: () => ({ ...devGpu(), ami: "ubuntu-22.04" }),
      path: "ami",
      message: /AMI id .* or an absolute SSM parameter/,
    },
    {
      title: "both ami and amiParameter",
      gpu: () => ({ ...devGpu(), ami: "ami-0123456789abcdef0", amiParameter: "/a/b" }),
      path: "amiParameter",
      message: /former name of gpu.ami/,
    },
    {
      title: "a gateway base image not pinned by digest",
      gpu: () => ({ ...devGpu(), gatewayBaseImage: "node:22-alpine" }),
      path: "gatewayBaseImage",
      message: /pin the image by digest/,
    },
  ];
  for (const c of rejected) {
    it(`rejects ${c.title}`, () => {
      // Act
      const result = gpuConfigSchema.safeParse(c.gpu());
      // Assess
      expect(result.success).to.equal(false);
      const issue = result.error!.issues.find((i) => i.path.join(".") === c.path);
      expect(issue?.message, JSON.stringify(result.error!.issues)).to.match(c.message);
    });
  }
});
