import { expect } from "chai";
import { parseLauncherConfig, resolveTaskDefinition } from "../../../functions/retraining/config";
import { EnvConfigError } from "../../../functions/shared/env";

const ENV = {
  ECS_CLUSTER: "platform-cluster",
  ECS_SUBNETS: "subnet-a, subnet-b,",
  ECS_SECURITY_GROUPS: "sg-1",
  ENVIRONMENT: "dev",
  RETRAINING_STATE_TABLE: "retraining-state",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/retraining-dlq",
  RETRAINING_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/retraining",
  RETRAINING_INTENT_TABLE: "retraining-intent",
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
        retrainingQueueUrl: "https://sqs.us-east-1.amazonaws.com/123456789012/retraining",
        deferDelaySeconds: 60,
        intentTable: "retraining-intent",
        intentRetentionSeconds: 17 * 86_400,
      });
      expect(parseLauncherConfig(ENV)).to.not.have.property("maxReceiveCount");
      expect(parseLauncherConfig({ ...ENV, MAX_RECEIVE_COUNT: "3", RETRAINING_INTENT_RETENTION_SECONDS: "1382400" })).to.deep.include({ maxReceiveCount: 3, intentRetentionSeconds: 1_382_400 });
      expect(parseLauncherConfig({ ...ENV, DEFER_DELAY_SECONDS: "0" }).deferDelaySeconds).to.equal(0);
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
      ["no RETRAINING_QUEUE_URL (deferred messages are re-sent there)", { RETRAINING_QUEUE_URL: "" }, /RETRAINING_QUEUE_URL is required/],
      ["DEFER_DELAY_SECONDS above SQS's 900", { DEFER_DELAY_SECONDS: "901" }, /DEFER_DELAY_SECONDS is invalid/],
      ["no RETRAINING_INTENT_TABLE (RunTask once per message rests on it)", { RETRAINING_INTENT_TABLE: "" }, /RETRAINING_INTENT_TABLE is required/],
      ["an intent kept less than ECS's 24 h clientToken window", { RETRAINING_INTENT_RETENTION_SECONDS: "3600" }, /RETRAINING_INTENT_RETENTION_SECONDS is invalid/],
      ["MAX_RECEIVE_COUNT 1 (DESIGN: never 1)", { MAX_RECEIVE_COUNT: "1" }, /MAX_RECEIVE_COUNT is invalid/],
    ];
    for (const [label, patch, message] of bad) {
      it(`refuses ${label}`, () => {
        expect(() => parseLauncherConfig({ ...ENV, ...patch })).to.throw(EnvConfigError, message);
      });
    }

    // Each refusal says why, so an operator can fix the variable from the error alone.
    const refusedWithReason: Array<[string, Record<string, string>, string]> = [
      ["USE_SPOT with a boolean word inside a longer one", { USE_SPOT: "xtrue" }, "USE_SPOT is invalid (must be true or false"],
      ["USE_SPOT with a boolean word followed by more", { USE_SPOT: "truex" }, "USE_SPOT is invalid (must be true or false"],
      ["no subnets after trimming", { ECS_SUBNETS: " , " }, "ECS_SUBNETS is invalid (must name at least one subnet"],
      ["no security groups after trimming", { ECS_SECURITY_GROUPS: "," }, "ECS_SECURITY_GROUPS is invalid (must name at least one security group"],
      ["a task definition family with a space", { ECS_TASK_DEFINITION_FAMILY: "bad family" }, "ECS_TASK_DEFINITION_FAMILY is invalid (must be a task definition family"],
      ["an ENVIRONMENT not starting with a letter", { ENVIRONMENT: "1dev" }, "ENVIRONMENT is invalid (must be a short lowercase environment name"],
      ["an ENVIRONMENT with a character after the name", { ENVIRONMENT: "dev!" }, "ENVIRONMENT is invalid (must be a short lowercase environment name"],
    ];
    for (const [label, patch, reason] of refusedWithReason) {
      it(`refuses ${label}, saying why`, () => {
        expect(() => parseLauncherConfig({ ...ENV, ...patch })).to.throw(EnvConfigError, reason);
      });
    }

    it("takes an explicit task definition family and container name of several characters", () => {
      expect(parseLauncherConfig({ ...ENV, ECS_TASK_DEFINITION_FAMILY: "tradai-strategy_gpu", ECS_CONTAINER_NAME: "strategy-main" })).to.deep.include({
        taskDefinition: "tradai-strategy_gpu-dev",
        containerName: "strategy-main",
      });
    });
  });
});
