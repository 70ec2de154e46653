import { expect } from "chai";
import { parseStackConfig } from "../../../infra/config";
import { fargateSizeProblem } from "../../../infra/aws-rules";
import { workerConfigIssues, workQueueVisibilitySeconds } from "../../../infra/parts/worker.config";
import { clusterTasksArn } from "../../../infra/parts/worker";
import { configIssues, devConfig, withValue } from "../helpers/stack-config";

describe("worker config (encache:worker)", () => {
  it("accepts the dev stack's worker section", () => {
    const cfg = parseStackConfig(devConfig());
    expect(cfg.worker).to.deep.include({ concurrency: 2, minTasks: 1, maxTasks: 3, fargateBase: 0 });
  });

  const bad: Array<[string, string, unknown, RegExp]> = [
    ["N above 10", "worker.concurrency", 11, /encache:worker\.concurrency:/],
    ["zero minimum tasks", "worker.minTasks", 0, /encache:worker\.minTasks:/],
    ["min above max", "worker.minTasks", 5, /encache:worker\.minTasks: must not exceed maxTasks/],
    ["a FARGATE base above max", "worker.fargateBase", 9, /encache:worker\.fargateBase: must not exceed maxTasks/],
    ["memory that does not fit the CPU", "worker.memoryMb", 8192, /encache:worker\.memoryMb: memory 8192 MiB does not fit cpu 512/],
    ["a grace period leaving no margin", "worker.shutdownGraceSeconds", 106, /encache:worker\.shutdownGraceSeconds: must be at most 105/],
    ["a heartbeat too long for the maximum visibility", "worker.maxVisibilitySeconds", 120, /encache:worker\.(heartbeatSeconds|defaultVisibilitySeconds)/],
    ["an empty allow-list", "worker.executables", {}, /encache:worker\.executables: must allow at least one executable/],
    ["a relative executable", "worker.executables", { x: { command: "sh" } }, /encache:worker\.executables\.x\.command: must be an absolute path/],
    ["a missing target", "worker.backlogPerTaskTarget", undefined, /encache:worker\.backlogPerTaskTarget: is required/],
    ["retention of 14 days", "worker.messageRetentionSeconds", 1_209_600, /encache:worker\.messageRetentionSeconds/],
    ["no base image", "worker.baseImage", undefined, /encache:worker\.baseImage: is required/],
    [
      "a base image by tag only, which can move under an existing image tag",
      "worker.baseImage",
      "node:22-alpine",
      /encache:worker\.baseImage: must pin the image by digest/,
    ],
    [
      "a base image digest one hex digit short",
      "worker.baseImage",
      `node:22-alpine@sha256:${"a".repeat(63)}`,
      /encache:worker\.baseImage: must pin the image by digest/,
    ],
    [
      "a base image digest in upper case",
      "worker.baseImage",
      `node:22-alpine@sha256:${"A".repeat(64)}`,
      /encache:worker\.baseImage: must pin the image by digest/,
    ],
    [
      "a base image pinned by another algorithm",
      "worker.baseImage",
      `node:22-alpine@sha512:${"a".repeat(64)}`,
      /encache:worker\.baseImage: must pin the image by digest/,
    ],
  ];
  for (const [name, key, value, reason] of bad) {
    it(`rejects ${name}, naming the key`, () => {
      const issues = configIssues(withValue(devConfig(), key, value));
      expect(
        issues.some((i) => reason.test(i)),
        issues.join("\n"),
      ).to.equal(true);
    });
  }

  for (const image of [
    `node:22-alpine@sha256:${"0".repeat(64)}`,
    `node@sha256:${"f".repeat(64)}`,
    `public.ecr.aws/docker/library/node:22-alpine@sha256:${"1".repeat(64)}`,
    `registry.local:5000/base/node:22@sha256:${"2".repeat(64)}`,
  ]) {
    it(`accepts the digest-pinned base image ${image.split("@")[0]}@sha256:…`, () => {
      expect(configIssues(withValue(devConfig(), "worker.baseImage", image))).to.deep.equal([]);
    });
  }

  it("checks cross-field rules without zod (pure)", () => {
    const ok = {
      concurrency: 1,
      cpu: 256,
      memoryMb: 512,
      minTasks: 1,
      maxTasks: 2,
      backlogPerTaskTarget: 5,
      scaleOutCooldownSeconds: 60,
      scaleInCooldownSeconds: 300,
      fargateBase: 0,
      idleWindowSeconds: 10,
      maxProtectedSeconds: 3600,
      defaultVisibilitySeconds: 600,
      maxVisibilitySeconds: 3600,
      heartbeatSeconds: 60,
      retryDelaySeconds: 30,
      shutdownGraceSeconds: 100,
      protectionExpiresMinutes: 60,
    };
    expect(workerConfigIssues(ok)).to.deep.equal([]);
    expect(workerConfigIssues({ ...ok, protectionExpiresMinutes: 1, heartbeatSeconds: 60 }).map((i) => i.path.join("."))).to.deep.equal([
      "protectionExpiresMinutes",
    ]);
  });

  const sizes: Array<[number, number, boolean]> = [
    [256, 512, true],
    [256, 4096, false],
    [512, 1024, true],
    [2048, 8192, true],
    [4096, 8000, false],
    [300, 1024, false],
  ];
  for (const [cpu, mem, ok] of sizes) {
    it(`${ok ? "accepts" : "rejects"} Fargate size ${cpu}/${mem}`, () => expect(fargateSizeProblem(cpu, mem) === undefined).to.equal(ok));
  }

  it("sizes the work queue's own visibility as one heartbeat extension, capped", () => {
    expect(workQueueVisibilitySeconds({ heartbeatSeconds: 60, maxVisibilitySeconds: 43_200 })).to.equal(180);
    expect(workQueueVisibilitySeconds({ heartbeatSeconds: 60, maxVisibilitySeconds: 100 })).to.equal(100);
  });

  it("scopes task protection to the cluster's tasks", () => {
    expect(clusterTasksArn("arn:aws:ecs:us-east-1:123456789012:cluster/platform")).to.equal("arn:aws:ecs:us-east-1:123456789012:task/platform/*");
  });
});
