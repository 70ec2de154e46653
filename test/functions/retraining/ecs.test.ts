import { ListTasksCommand, RunTaskCommand } from "@aws-sdk/client-ecs";
import { expect } from "chai";
import { countRunningTasks, LaunchFailedError, launchTask, runTaskInput } from "../../../functions/retraining/ecs";
import { launcherConfig, mockedLauncherDeps } from "../helpers/retraining-deps";

describe("retraining/ecs", () => {
  it("counts every page of ListTasks, a page without taskArns as none", async () => {
    const t = mockedLauncherDeps();
    t.ecsMock.on(ListTasksCommand, { nextToken: undefined }).resolves({ taskArns: ["a", "b"], nextToken: "p1" });
    t.ecsMock.on(ListTasksCommand, { nextToken: "p1" }).resolves({ nextToken: "p2" });
    t.ecsMock.on(ListTasksCommand, { nextToken: "p2" }).resolves({ taskArns: ["c"] });

    expect(await countRunningTasks(t.deps.ecs, "platform-cluster")).to.equal(3);
  });

  it("the origin message id is RunTask's clientToken, so a redelivery cannot start a second task", () => {
    const input = runTaskInput(launcherConfig(), { message: { modelName: "M", trigger: "manual" }, messageId: "origin-7", jobId: "j" });

    expect(input.clientToken).to.equal("origin-7");
  });

  describe("LaunchFailedError: RunTask's failures, readable", () => {
    const cases: Array<[string, ConstructorParameters<typeof LaunchFailedError>[0], string]> = [
      [
        "reason and detail of each failure",
        [{ reason: "RESOURCE:ENI", detail: "no ENI" }, { reason: "AGENT" }],
        "RunTask started no task: RESOURCE:ENI no ENI; AGENT",
      ],
      ["no failures listed", [], "RunTask started no task: no failure reason given"],
      ["a failure with neither reason nor detail", [{ arn: "arn:x" }], "RunTask started no task: no failure reason given"],
    ];
    for (const [label, failures, message] of cases) {
      it(label, () => {
        const error = new LaunchFailedError(failures);
        expect(error.message).to.equal(message);
        expect(error.name).to.equal("LaunchFailedError");
        expect(error.failures).to.equal(failures);
      });
    }
  });

  const noTask: Array<[string, Record<string, unknown>]> = [
    ["an answer without tasks or failures", {}],
    ["a task without an ARN", { tasks: [{ lastStatus: "PROVISIONING" }] }],
  ];
  for (const [label, answer] of noTask) {
    it(`RunTask with ${label} is a failed launch with no failures listed`, async () => {
      const t = mockedLauncherDeps();
      t.ecsMock.on(RunTaskCommand).resolves(answer);

      const error = await launchTask(t.deps.ecs, { taskDefinition: "td" }).then(
        () => undefined,
        (e: unknown) => e,
      );

      expect(error).to.be.instanceOf(LaunchFailedError);
      expect((error as LaunchFailedError).failures).to.deep.equal([]);
    });
  }
});
