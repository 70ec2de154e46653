import { expect } from "chai";
import { LaunchSlots } from "../../../functions/retraining/capacity";
import { parseLauncherConfig, resolveTaskDefinition } from "../../../functions/retraining/config";
import { EnvConfigError } from "../../../functions/shared/env";
import { jobIdFor } from "../../../functions/retraining/job-id";
import { parseRetrainingMessage, strategyOf } from "../../../functions/retraining/message";
import { launcherMetrics } from "../../../functions/retraining/runtime-deps";

const ENV = {
  ECS_CLUSTER: "platform-cluster",
  ECS_SUBNETS: "subnet-a, subnet-b,",
  ECS_SECURITY_GROUPS: "sg-1",
  ENVIRONMENT: "dev",
  RETRAINING_STATE_TABLE: "retraining-state",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/retraining-dlq",
};

describe("retraining/launcher units", () => {
  describe("config (seed 001's env table)", () => {
    it("applies the seed's defaults and resolves the family per environment", () => {
      const c = parseLauncherConfig(ENV);
      expect(c).to.deep.include({
        taskDefinition: "tradai-strategy-generic-dev",
        containerName: "strategy",
        useSpot: false,
        maxConcurrentTasks: 5,
        stateTable: "retraining-state",
        subnets: ["subnet-a", "subnet-b"],
        securityGroups: ["sg-1"],
      });
    });

    it("prefers ECS_TASK_DEFINITION_ARN over the family", () => {
      const arn = "arn:aws:ecs:us-east-1:123456789012:task-definition/tradai-strategy-generic-dev:7";
      expect(parseLauncherConfig({ ...ENV, ECS_TASK_DEFINITION_ARN: arn, USE_SPOT: "TRUE" })).to.deep.include({ taskDefinition: arn, useSpot: true });
      expect(resolveTaskDefinition(undefined, "fam", "prod")).to.equal("fam-prod");
    });

    const bad: Array<[string, Record<string, string>, RegExp]> = [
      ["no ECS_CLUSTER", { ECS_CLUSTER: "" }, /ECS_CLUSTER is required/],
      ["no subnets after trimming", { ECS_SUBNETS: " , " }, /ECS_SUBNETS is invalid/],
      ["USE_SPOT not a boolean", { USE_SPOT: "maybe" }, /USE_SPOT is invalid/],
      ["no RETRAINING_STATE_TABLE (the capacity lease lives there)", { RETRAINING_STATE_TABLE: "" }, /RETRAINING_STATE_TABLE is/],
      ["MAX_CONCURRENT_TASKS 0", { MAX_CONCURRENT_TASKS: "0" }, /MAX_CONCURRENT_TASKS is invalid/],
    ];
    for (const [label, patch, message] of bad) {
      it(`refuses ${label}`, () => {
        expect(() => parseLauncherConfig({ ...ENV, ...patch })).to.throw(EnvConfigError, message);
      });
    }
  });

  describe("message", () => {
    it("accepts the seed's body and ignores extra keys", () => {
      expect(parseRetrainingMessage(JSON.stringify({ model_name: "PascalStrategy", trigger: "manual", extra: 1 }))).to.deep.equal({
        ok: true,
        message: { modelName: "PascalStrategy", trigger: "manual" },
      });
    });

    it("strategy is the model name's segment before the first '-', as written (the seed's text, not its tag example)", () => {
      expect(strategyOf("PascalStrategy")).to.equal("PascalStrategy");
      expect(strategyOf("PascalStrategy-btc-v2")).to.equal("PascalStrategy");
    });
  });

  describe("job id", () => {
    it("is a stable UUID v5 per message id", () => {
      expect(jobIdFor("m-1")).to.equal(jobIdFor("m-1")).and.match(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(jobIdFor("m-1")).to.not.equal(jobIdFor("m-2"));
    });
  });

  describe("launch slots", () => {
    it("counts running tasks and this batch's launches against the cap, and a failed launch gives its slot back", () => {
      const slots = new LaunchSlots(1, 3);
      expect([slots.tryTake(), slots.tryTake(), slots.tryTake()]).to.deep.equal([true, true, false]);
      slots.release();
      expect(slots.tryTake()).to.equal(true);
      expect(slots.inUse).to.equal(3);
    });
  });

  describe("metrics", () => {
    it("emit EMF with exactly the Environment dimension (no service dimension)", () => {
      const lines: string[] = [];
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = ((chunk: string | Uint8Array) => {
        lines.push(String(chunk));
        return true;
      }) as typeof process.stdout.write;
      try {
        const metrics = launcherMetrics();
        metrics.addDimension("Environment", "dev");
        metrics.addMetric("ECSTasksLaunched", "Count", 1);
        metrics.publishStoredMetrics();
      } finally {
        process.stdout.write = write;
      }
      const emf = JSON.parse(lines.join("").trim().split("\n").pop() ?? "{}") as { _aws: { CloudWatchMetrics: Array<{ Dimensions: string[][] }> }; Environment: string };
      expect(emf._aws.CloudWatchMetrics[0]?.Dimensions).to.deep.equal([["Environment"]]);
      expect(emf.Environment).to.equal("dev");
    });
  });
});
