import { expect } from "chai";
import { sampleEnv } from "../helpers/env-samples";

/** The platform's variables for the launcher, as the infra sets them. */
const ENV: Record<string, string> = {
  ...sampleEnv("retraining launcher"),
  ECS_CLUSTER: "platform-cluster",
  ECS_SUBNETS: "subnet-a",
  ECS_SECURITY_GROUPS: "sg-1",
  ENVIRONMENT: "dev",
  RETRAINING_STATE_TABLE: "retraining-state",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/retraining-dlq",
  RETRAINING_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/retraining",
  RETRAINING_INTENT_TABLE: "retraining-intent",
};

describe("retraining/launcher entry", function () {
  // Loading the entry loads the AWS SDK clients: slow on a busy machine.
  this.timeout(30_000);
  const saved: Record<string, string | undefined> = {};
  before(() => {
    // The entry builds its handler from process.env when it is loaded, as at a cold start.
    for (const [name, value] of Object.entries({ ...ENV, AWS_REGION: "us-east-1" })) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
  });
  after(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it("defaultDeps runs the real clients with the config parsed from the environment", async () => {
    const { defaultDeps, handler } = await import("../../../functions/retraining/launcher.js");

    const deps = defaultDeps({ ...ENV, MAX_CONCURRENT_TASKS: "7" });

    expect(handler).to.be.a("function");
    expect(deps.config).to.deep.include({ cluster: "platform-cluster", maxConcurrentTasks: 7, taskDefinition: ENV.ECS_TASK_DEFINITION_ARN });
    expect(deps.now()).to.be.instanceOf(Date);
  });
});
