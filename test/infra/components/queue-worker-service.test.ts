import { expect } from "chai";
import {
  backlogPerTaskMetrics,
  capacityProviderStrategy,
  queueWorkerServiceDefaults,
  resolveQueueWorkerServiceArgs,
} from "../../../infra/components/queue-worker-service";

const scaling = { minTasks: 1, maxTasks: 4, backlogPerTaskTarget: 10 };
const family = "encache-worker-dev";

describe("QueueWorkerService validators (pure)", () => {
  it("fills the defaults: 120 s stop timeout, /scratch, protection on", () => {
    const r = resolveQueueWorkerServiceArgs({ family, scaling });
    expect(r).to.deep.include({
      stopTimeoutSeconds: 120,
      scratchPath: "/scratch",
      taskProtection: true,
      containerName: "worker",
      cpu: queueWorkerServiceDefaults.cpu,
    });
    expect(r.scaling).to.deep.equal({ ...scaling, scaleOutCooldownSeconds: 60, scaleInCooldownSeconds: 300 });
  });

  const bad: Array<[string, Parameters<typeof resolveQueueWorkerServiceArgs>[0], RegExp]> = [
    ["a stop timeout over Fargate's 120 s", { family, scaling, stopTimeoutSeconds: 121 }, /stopTimeoutSeconds/],
    ["zero minimum tasks", { family, scaling: { ...scaling, minTasks: 0 } }, /scaling\.minTasks/],
    ["min above max", { family, scaling: { ...scaling, minTasks: 5 } }, /must not exceed/],
    ["a zero target", { family, scaling: { ...scaling, backlogPerTaskTarget: 0 } }, /backlogPerTaskTarget/],
    ["a scratch path at the root", { family, scaling, scratchPath: "/" }, /scratchPath/],
    ["a relative scratch path", { family, scaling, scratchPath: "tmp" }, /scratchPath/],
    ["a container name with spaces", { family, scaling, containerName: "my worker" }, /containerName/],
    ["a family ECS would refuse", { family: "encache/worker", scaling }, /family "encache\/worker"/],
  ];
  for (const [name, args, reason] of bad) it(`rejects ${name}`, () => expect(() => resolveQueueWorkerServiceArgs(args)).to.throw(reason));

  it("puts every task on FARGATE_SPOT, with an optional FARGATE base first", () => {
    expect(capacityProviderStrategy(0)).to.deep.equal([{ capacityProvider: "FARGATE_SPOT", base: 0, weight: 1 }]);
    expect(capacityProviderStrategy(2)).to.deep.equal([
      { capacityProvider: "FARGATE_SPOT", base: 0, weight: 1 },
      { capacityProvider: "FARGATE", base: 2, weight: 0 },
    ]);
  });

  it("computes backlog per task as visible messages ÷ running tasks from Container Insights", () => {
    const [visible, running, backlog] = backlogPerTaskMetrics({ queueName: "work", clusterName: "c", serviceName: "s" });
    expect(visible!.metricStat!.metric).to.deep.equal({
      namespace: "AWS/SQS",
      metricName: "ApproximateNumberOfMessagesVisible",
      dimensions: [{ name: "QueueName", value: "work" }],
    });
    expect(running!.metricStat!.metric.namespace).to.equal("ECS/ContainerInsights");
    expect(running!.metricStat!.metric.metricName).to.equal("RunningTaskCount");
    expect(backlog).to.deep.include({ expression: "visible / running", returnData: true });
    expect([visible!.returnData, running!.returnData]).to.deep.equal([false, false]);
  });
});
