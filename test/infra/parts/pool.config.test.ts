import { expect } from "chai";
import { parseStackConfig } from "../../../infra/config";
import { poolCrossFieldIssues } from "../../../infra/parts/pool.config";
import { configIssues, devConfig, withValue } from "../helpers/stack-config";

describe("pool config (encache:pool)", () => {
  it("accepts the dev stack and fills the defaults", () => {
    const pool = parseStackConfig(devConfig()).pool;
    expect(Object.keys(pool.classes)).to.deep.equal(["cpu-small", "gpu-small"]);
    expect(pool.classes["cpu-small"]).to.deep.include({
      amiParameter: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
      rootDeviceName: "/dev/xvda",
    });
    expect(pool).to.deep.include({ tolerance: 5, requeueDelaySeconds: 5 });
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ["pool.classes.gpu-small.size", 51, /^encache:pool\.classes\.gpu-small\.size: /],
    ["pool.classes.gpu-small.instanceTypes", ["gpu"], /^encache:pool\.classes\.gpu-small\.instanceTypes\[0\]: must be an EC2 instance type/],
    ["pool.classes.gpu-small.instanceTypes", [], /^encache:pool\.classes\.gpu-small\.instanceTypes: /],
    ["pool.classes.gpu-small.usageClass", "reserved", /^encache:pool\.classes\.gpu-small\.usageClass: /],
    ["pool.classes.gpu-small.rootDeviceName", "sda1", /^encache:pool\.classes\.gpu-small\.rootDeviceName: must be a device name/],
    ["pool.classes", {}, /^encache:pool\.classes: must declare at least one resource class/],
    ["pool.requeueDelaySeconds", 901, /^encache:pool\.requeueDelaySeconds: /],
    ["pool.tolerance", 0, /^encache:pool\.tolerance: /],
    [
      "pool.refill.queueVisibilityTimeoutSeconds",
      100,
      /^encache:pool\.refill\.queueVisibilityTimeoutSeconds: must be at least 6 × refill\.timeoutSeconds \+ refill\.batchingWindowSeconds = 360/,
    ],
    ["pool.advertRetentionSeconds", 120, /^encache:pool\.advertRetentionSeconds: must be at least one refill period/],
    ["pool.advertRetentionSeconds", 3600, /^encache:pool\.advertRetentionSeconds: must be at most two refill periods/],
    ["pool.refill.everyMinutes", undefined, /^encache:pool\.refill\.everyMinutes: is required/],
  ];
  for (const [path, value, message] of bad) {
    it(`names the key for ${path} = ${JSON.stringify(value)}`, () => {
      const issues = configIssues(withValue(devConfig(), path, value));
      expect(
        issues.some((i) => message.test(i)),
        issues.join("\n"),
      ).to.equal(true);
    });
  }

  it("rejects a class name that cannot be part of resource names", () => {
    const config = devConfig();
    const pool = structuredClone(config.pool) as { classes: Record<string, unknown> };
    pool.classes["GPU_Big"] = pool.classes["gpu-small"];
    expect(configIssues({ ...config, pool }).join("\n")).to.match(/encache:pool\.classes\.GPU_Big: /);
  });

  it("cross-field checks are pure and relative to encache:pool", () => {
    expect(
      poolCrossFieldIssues({
        advertRetentionSeconds: 300,
        refill: {
          everyMinutes: 5,
          timeoutSeconds: 60,
          memoryMb: 256,
          batchSize: 1,
          batchingWindowSeconds: 0,
          maxConcurrency: 2,
          queueVisibilityTimeoutSeconds: 360,
        },
      }),
    ).to.deep.equal([]);
  });
});
