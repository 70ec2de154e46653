import { expect } from "chai";
import { parseLauncherConfig, resolveTaskDefinition } from "../../../functions/retraining/config";
import { EnvConfigError } from "../../../functions/shared/env";
import { sampleEnv } from "../helpers/env-samples";

const ENV: Record<string, string> = { ...sampleEnv("retraining launcher"), ECS_SUBNETS: "subnet-a, subnet-b,", ENVIRONMENT: "dev" };

describe("retraining/launcher units", () => {
  describe("config (seed 001's env table)", () => {
    it("reads every variable the program sets, and RunTask gets the deployed revision", () => {
      // Act
      const c = parseLauncherConfig(ENV);

      // Assess
      expect(c).to.deep.include({
        taskDefinition: ENV.ECS_TASK_DEFINITION_ARN,
        containerName: "strategy",
        useSpot: true,
        maxConcurrentTasks: 5,
        stateTable: "state",
        subnets: ["subnet-a", "subnet-b"],
        securityGroups: ["sg-1"],
        deferDelaySeconds: 60,
        intentTable: "intents",
        intentRetentionSeconds: 1_468_800,
        maxReceiveCount: 3,
      });
    });

    it("resolves the family per environment without ECS_TASK_DEFINITION_ARN, and has no maxReceiveCount without MAX_RECEIVE_COUNT", () => {
      // Prepare
      const { ECS_TASK_DEFINITION_ARN: _arn, MAX_RECEIVE_COUNT: _count, ...env } = ENV;

      // Act
      const c = parseLauncherConfig(env);

      // Assess
      expect(c.taskDefinition).to.equal("tradai-strategy-generic-dev");
      expect(c).to.not.have.property("maxReceiveCount");
      expect(resolveTaskDefinition(undefined, "fam", "prod")).to.equal("fam-prod");
    });

    // Required and well-typed: the bounds are the stack schema's (infra/parts/retraining.config.ts).
    const bad: Array<[string, Record<string, string>, string]> = [
      ["no ECS_CLUSTER", { ECS_CLUSTER: "" }, "ECS_CLUSTER is required"],
      ["no RETRAINING_STATE_TABLE (the capacity lease lives there)", { RETRAINING_STATE_TABLE: "" }, "RETRAINING_STATE_TABLE is required"],
      ["no RETRAINING_QUEUE_URL (deferred messages are re-sent there)", { RETRAINING_QUEUE_URL: "" }, "RETRAINING_QUEUE_URL is required"],
      ["no RETRAINING_INTENT_TABLE (RunTask once per message rests on it)", { RETRAINING_INTENT_TABLE: "" }, "RETRAINING_INTENT_TABLE is required"],
      ["no MAX_CONCURRENT_TASKS (the stack schema's default is 5)", { MAX_CONCURRENT_TASKS: "" }, "MAX_CONCURRENT_TASKS is required"],
      ["MAX_CONCURRENT_TASKS that is no whole number", { MAX_CONCURRENT_TASKS: "five" }, "MAX_CONCURRENT_TASKS is invalid (must be a whole number"],
      ["USE_SPOT with a boolean word inside a longer one", { USE_SPOT: "xtrue" }, "USE_SPOT is invalid (must be true or false"],
      ["USE_SPOT with a boolean word followed by more", { USE_SPOT: "truex" }, "USE_SPOT is invalid (must be true or false"],
      ["a queue URL that is not http(s)", { RETRAINING_QUEUE_URL: "sqs://retraining" }, "RETRAINING_QUEUE_URL is invalid (must be an http(s) URL"],
    ];
    for (const [label, patch, reason] of bad) {
      it(`refuses ${label}, saying why`, () => {
        expect(() => parseLauncherConfig({ ...ENV, ...patch })).to.throw(EnvConfigError, reason);
      });
    }
  });
});
