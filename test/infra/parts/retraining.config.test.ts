import { expect } from "chai";
import { strategyFamily } from "../../../infra/parts/retraining";
import { FARGATE_CPU_UNITS, fargateSizeProblem } from "../../../infra/aws-rules";
import { MAX_SCHEDULE_SLUG, retrainingConfigProblems, retrainingConfigSchema, scheduleSlug } from "../../../infra/parts/retraining.config";
import { autoNamesOverLimit } from "../../../infra/components/queue-schedule";
import { configError, devConfig, withValue } from "../helpers/stack-config";

describe("retraining config (encache:retraining)", () => {
  it("fills the seed's defaults around the one required key", () => {
    const c = retrainingConfigSchema.parse({ strategy: { image: "strategy:1" } });
    expect(c).to.deep.include({
      queueVisibilityTimeoutSeconds: 600,
      messageRetentionSeconds: 86_400,
      maxConcurrentTasks: 5,
      deferDelaySeconds: 60,
      useSpot: false,
      spotFallback: "on-demand",
      taskDefinitionFamily: "tradai-strategy-generic",
      containerName: "strategy",
      schedules: [],
    });
    expect(c.launcher).to.deep.equal({ timeoutSeconds: 30, memoryMb: 256, batchSize: 10, batchingWindowSeconds: 5, maxConcurrency: 2 });
    expect(c.strategy).to.deep.include({ cpu: 1024, memoryMb: 2048 });
  });

  const bad: Array<[string, string, unknown, RegExp]> = [
    [
      "visibility below 6 × timeout + window",
      "retraining.queueVisibilityTimeoutSeconds",
      100,
      /encache:retraining\.queueVisibilityTimeoutSeconds: must be at least 6 × launcher\.timeoutSeconds \+ launcher\.batchingWindowSeconds = 185/,
    ],
    ["memory that does not fit the cpu", "retraining.strategy.memoryMb", 1024, /encache:retraining\.strategy\.memoryMb: memory 1024 MiB does not fit cpu 1024/],
    ["a cpu that is no Fargate size", "retraining.strategy.cpu", 1000, /encache:retraining\.strategy\.cpu: cpu 1000 is not a Fargate size/],
    ["no image", "retraining.strategy.image", undefined, /encache:retraining\.strategy\.image: is required/],
    [
      "a schedule expression Scheduler refuses",
      "retraining.schedules",
      [{ modelName: "M", scheduleExpression: "every day" }],
      /encache:retraining\.schedules\[0\]\.scheduleExpression/,
    ],
    [
      "two schedules for one model slug",
      "retraining.schedules",
      [
        { modelName: "Pascal", scheduleExpression: "rate(1 day)" },
        { modelName: "pascal", scheduleExpression: "rate(2 days)" },
      ],
      /encache:retraining\.schedules\[1\]\.modelName: collides with schedules\[0\]/,
    ],
    [
      "a model name the launcher would quarantine",
      "retraining.schedules",
      [{ modelName: "-bad", scheduleExpression: "rate(1 day)" }],
      /encache:retraining\.schedules\[0\]\.modelName/,
    ],
    [
      "a time zone that is no IANA name",
      "retraining.schedules",
      [{ modelName: "M", scheduleExpression: "cron(0 3 * * ? *)", timezone: "Mars/Olympus" }],
      /encache:retraining\.schedules\[0\]\.timezone: "Mars\/Olympus" is not an IANA time zone/,
    ],
    [
      "a time zone in the wrong case",
      "retraining.schedules",
      [{ modelName: "M", scheduleExpression: "cron(0 3 * * ? *)", timezone: "europe/london" }],
      /encache:retraining\.schedules\[0\]\.timezone: .*not spelt as IANA spells it; use Europe\/London/,
    ],
    [
      "an empty time zone",
      "retraining.schedules",
      [{ modelName: "M", scheduleExpression: "cron(0 3 * * ? *)", timezone: "" }],
      /encache:retraining\.schedules\[0\]\.timezone: must not be empty/,
    ],
    ["MAX_CONCURRENT_TASKS 0", "retraining.maxConcurrentTasks", 0, /encache:retraining\.maxConcurrentTasks/],
    ["a defer delay above SQS's 900 s", "retraining.deferDelaySeconds", 901, /encache:retraining\.deferDelaySeconds/],
    ["a negative defer delay", "retraining.deferDelaySeconds", -1, /encache:retraining\.deferDelaySeconds/],
    ["a fractional defer delay", "retraining.deferDelaySeconds", 1.5, /encache:retraining\.deferDelaySeconds/],
    ["a Spot fallback that is neither on-demand nor fail", "retraining.spotFallback", "retry", /encache:retraining\.spotFallback: .*on-demand.*fail/],
  ];
  for (const [label, key, value, message] of bad) {
    it(`names the key for ${label}`, () => {
      expect(configError(withValue(devConfig(), key, value)).message).to.match(message);
    });
  }

  it("cross-field checks are pure and path-relative", () => {
    const problems = retrainingConfigProblems({
      queueVisibilityTimeoutSeconds: 600,
      launcher: { timeoutSeconds: 30, memoryMb: 256, batchSize: 20, batchingWindowSeconds: 0, maxConcurrency: 2 },
      strategy: { image: "i", cpu: 256, memoryMb: 512, cpuArchitecture: "X86_64" },
      schedules: [],
    });
    expect(problems).to.deep.equal([{ path: ["launcher", "batchingWindowSeconds"], message: "must be > 0 when batchSize is above 10 (Lambda rule)" }]);
  });

  it("an invalid cpu is reported at strategy.cpu only, not at strategy.memoryMb", () => {
    const problems = retrainingConfigProblems({
      queueVisibilityTimeoutSeconds: 600,
      launcher: { timeoutSeconds: 30, memoryMb: 256, batchSize: 10, batchingWindowSeconds: 5, maxConcurrency: 2 },
      strategy: { image: "i", cpu: 1000, memoryMb: 2048, cpuArchitecture: "X86_64" },
      schedules: [],
    });
    expect(problems.map((p) => p.path)).to.deep.equal([["strategy", "cpu"]]);
  });

  it("FARGATE_CPU_UNITS are exactly the cpu values the shared size check accepts", () => {
    for (const cpu of FARGATE_CPU_UNITS) expect(fargateSizeProblem(cpu, 0), String(cpu)).to.not.match(/is not a Fargate size/);
    for (const cpu of [0, 128, 1000, 3072, 32_768]) expect(fargateSizeProblem(cpu, 0), String(cpu)).to.match(/is not a Fargate size/);
  });

  it("slugs and families", () => {
    expect(scheduleSlug("PascalStrategy-eth v2")).to.equal("pascalstrategy-eth-v2");
    expect(strategyFamily("tradai-strategy-generic", "prod")).to.equal("tradai-strategy-generic-prod");
  });

  it("shortens a long model name's slug deterministically, so the schedule and its role fit AWS's 64 characters", () => {
    // Prepare: the longest model name the launcher accepts, and two that differ only at the end.
    const longest = `M${"x".repeat(255)}`;
    const a = `${"PascalStrategy-".repeat(4)}a`;
    const b = `${"PascalStrategy-".repeat(4)}b`;

    // Act
    const slugs = [longest, a, b].map(scheduleSlug);

    // Assess
    for (const slug of slugs) {
      expect(slug.length).to.be.at.most(MAX_SCHEDULE_SLUG);
      expect(autoNamesOverLimit(`retraining-schedule-${slug}`)).to.equal(undefined);
    }
    expect(slugs[1]).to.not.equal(slugs[2]);
    expect(scheduleSlug(a)).to.equal(slugs[1]);
  });

  it("the QueueSchedule guard names a logical name whose role would exceed 64 characters", () => {
    expect(autoNamesOverLimit(`retraining-schedule-${"x".repeat(32)}`)).to.match(/would be 65 characters; IAM and Scheduler allow 64/);
  });
});
