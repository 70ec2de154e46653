import { CreateServiceCommand, DescribeTasksCommand, ECSClient, RunTaskCommand, StopTaskCommand } from "@aws-sdk/client-ecs";
import { EC2Client } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import type { LauncherConfig } from "../../../functions/retraining/config";
import { countRunningTasks, launchTask, runTaskInput, STARTED_BY } from "../../../functions/retraining/ecs";
import { EcsTaskSimulator, type EcsTaskEvent, EXTERNAL_STOP_REASON, isServiceTask, stopReason, type SimTask } from "../../../local/hosts/ecs-tasks";
import { sleep } from "../../functions/helpers/worker-deps";
import { createFargateWorld } from "../../integration/helpers/aws-world";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

const CLUSTER = "local-cluster";
const FAMILY = "strategy-dev";

/** Polls an async check until true or the deadline. */
async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

describe("local ECS tasks: pure helpers", () => {
  const cases: Array<[string, { group?: string; startedBy?: string }, boolean]> = [
    ["a launcher task (family group, own startedBy)", { group: "family:strategy", startedBy: STARTED_BY }, false],
    ["a service task by group", { group: "service:worker" }, true],
    ["a service task by startedBy", { group: "family:worker", startedBy: "ecs-svc/1234567890" }, true],
    ["a task with neither", {}, false],
  ];
  for (const [name, task, expected] of cases) {
    it(`isServiceTask: ${name} → ${expected}`, () => {
      expect(isServiceTask(task)).to.equal(expected);
    });
  }

  it("stopReason carries the simulated exit code, since moto keeps containers at 0", () => {
    expect(stopReason("succeeded")).to.match(/exit code 0/);
    expect(stopReason("failed")).to.match(/exit code 1/);
  });
});

describe("local ECS tasks: EcsTaskSimulator against moto", function () {
  this.timeout(60_000);
  let ecs: ECSClient;
  let config: LauncherConfig;
  let sim: EcsTaskSimulator | undefined;
  let events: EcsTaskEvent[];

  beforeEach(async () => {
    await resetMoto();
    ecs = new ECSClient({});
    const ec2 = new EC2Client({});
    events = [];
    const network = await createFargateWorld(ecs, ec2, { cluster: CLUSTER, family: FAMILY });
    config = {
      cluster: CLUSTER,
      taskDefinition: FAMILY,
      containerName: "strategy",
      subnets: network.subnets,
      securityGroups: network.securityGroups,
      useSpot: true,
      spotFallback: "on-demand",
      stateTable: "unused",
      maxConcurrentTasks: 5,
      environment: "dev",
      quarantineQueueUrl: "unused",
      retrainingQueueUrl: "unused",
      deferDelaySeconds: 0,
      intentTable: "unused",
      intentRetentionSeconds: 86_400,
    };
  });

  afterEach(async () => {
    await sim?.stop();
    sim = undefined;
  });

  /** Exactly the launcher's RunTask: FARGATE_SPOT strategy, awsvpc, overrides, tags, startedBy. */
  const launch = (modelName: string, n: number) =>
    launchTask(ecs, runTaskInput(config, { message: { modelName, trigger: "manual" }, messageId: `msg-${n}`, jobId: `job-${n}` }));

  function simulator(opts: Partial<ConstructorParameters<typeof EcsTaskSimulator>[0]> = {}): EcsTaskSimulator {
    sim = new EcsTaskSimulator({
      ecs,
      motoEndpoint: motoEndpoint(),
      clusters: [CLUSTER],
      durationMs: () => 800,
      pollMs: 100,
      onEvent: (e) => events.push(e),
      ...opts,
    });
    return sim;
  }

  it("interrupt: Spot takes a running task back: stopped at once, and ECS's SpotInterruption event carries its startedBy and overrides", async () => {
    // Prepare
    const s = simulator({ durationMs: () => 60_000 });
    await s.start();
    const task = await launch("PascalStrategy-btc", 7);
    await until(() => s.stats().running === 1, "the simulator to see the task");
    const emitted: Array<Record<string, unknown>> = [];
    // Act
    await s.interrupt(task.taskArn, async (detail) => {
      emitted.push(detail);
    });
    // Assess
    expect(s.stats()).to.deep.include({ running: 0, interrupted: 1 });
    expect(await countRunningTasks(ecs, CLUSTER)).to.equal(0);
    expect(emitted).to.have.length(1);
    expect(emitted[0]).to.deep.include({ taskArn: task.taskArn, lastStatus: "STOPPED", stopCode: "SpotInterruption", startedBy: STARTED_BY });
    const env =
      (emitted[0]?.overrides as { containerOverrides: Array<{ environment: Array<{ name: string; value: string }> }> }).containerOverrides[0]?.environment ??
      [];
    expect(env).to.deep.include.members([
      { name: "JOB_ID", value: "job-7" },
      { name: "MODEL_NAME", value: "PascalStrategy-btc" },
    ]);
    await s
      .interrupt(task.taskArn, async () => undefined)
      .then(
        () => expect.fail("a stopped task cannot be interrupted"),
        (e: Error) => expect(e.message).to.match(/not a running task/),
      );
  });

  it("sees a launcher task with its overrides and tags, stops it after its duration, and the launcher's count drops", async () => {
    const s = simulator();
    await s.start();
    const task = await launch("PascalStrategy-btc", 1);
    expect(await countRunningTasks(ecs, CLUSTER)).to.equal(1);

    await until(() => s.stats().launched === 1, "the simulator to see the task");
    const [seen] = s.tasks();
    expect(seen).to.include({ taskArn: task.taskArn, startedBy: STARTED_BY, outcome: "running", stoppedAtMs: null });
    expect(seen?.environment).to.include({ JOB_ID: "job-1", MODEL_NAME: "PascalStrategy-btc", RETRAINING_TRIGGER: "manual" });
    expect(seen?.tags).to.include({ job_id: "job-1", model_name: "PascalStrategy-btc" });
    // The simulator's own DescribeTasks calls must not have moved the task on (state pinned).
    expect(await countRunningTasks(ecs, CLUSTER)).to.equal(1);

    await until(() => s.stats().succeeded === 1, "the task to be stopped");
    expect(s.stats()).to.deep.equal({ launched: 1, running: 0, succeeded: 1, failed: 0, interrupted: 0, peakRunning: 1 });
    expect(await countRunningTasks(ecs, CLUSTER)).to.equal(0);
    const [after] = s.tasks();
    expect(after?.stoppedAtMs).to.be.a("number");
    expect((after?.stoppedAtMs ?? 0) - (after?.seenAtMs ?? 0)).to.be.at.least(800);
    const described = (await ecs.send(new DescribeTasksCommand({ cluster: CLUSTER, tasks: [task.taskArn] }))).tasks?.[0];
    expect(described?.lastStatus).to.equal("STOPPED");
    expect(described?.stoppedReason).to.equal(stopReason("succeeded"));
    expect(events.map((e) => e.kind)).to.deep.equal(["started", "stopped"]);
  });

  it("pins moto's task state on start, so DescribeTasks by anyone leaves a task RUNNING until its duration is up", async () => {
    // Back to moto's default (one step per DescribeTasks), which survives /moto-api/reset.
    const unset = await fetch(`${motoEndpoint()}/moto-api/state-manager/unset-transition`, {
      method: "POST",
      body: JSON.stringify({ model_name: "ecs::task" }),
    });
    await unset.arrayBuffer();
    const s = simulator({ durationMs: () => 60_000 });
    await s.start();
    const task = await launch("Long", 1);
    await until(() => s.stats().launched === 1, "the simulator to see the task");

    const statuses: Array<string | undefined> = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await ecs.send(new DescribeTasksCommand({ cluster: CLUSTER, tasks: [task.taskArn] }))).tasks?.[0]?.lastStatus);
    }

    expect(statuses).to.deep.equal(Array(5).fill("RUNNING"));
    expect(s.stats().running).to.equal(1);
    expect(await countRunningTasks(ecs, CLUSTER)).to.equal(1);
  });

  it("fails the tasks the outcome picks, with the exit code in the stopped reason, and counts the peak", async () => {
    const s = simulator({ outcome: (t) => (t.environment.MODEL_NAME === "Broken" ? "failed" : "succeeded") });
    await s.start();
    const arns = [(await launch("Good", 1)).taskArn, (await launch("Broken", 2)).taskArn, (await launch("Good", 3)).taskArn];

    await until(() => s.stats().running === 0 && s.stats().launched === 3, "all three tasks to end");

    expect(s.stats()).to.deep.equal({ launched: 3, running: 0, succeeded: 2, failed: 1, interrupted: 0, peakRunning: 3 });
    const described = (await ecs.send(new DescribeTasksCommand({ cluster: CLUSTER, tasks: arns }))).tasks ?? [];
    const broken = described.find((t) => t.overrides?.containerOverrides?.[0]?.environment?.some((e) => e.value === "Broken"));
    expect(broken?.stoppedReason).to.equal(stopReason("failed"));
    expect(await countRunningTasks(ecs, CLUSTER)).to.equal(0);
  });

  it("ignores service tasks (group service:…), which run as local processes instead", async () => {
    await ecs.send(new CreateServiceCommand({ cluster: CLUSTER, serviceName: "worker", taskDefinition: FAMILY, desiredCount: 1 }));
    const service = await ecs.send(
      new RunTaskCommand({
        cluster: CLUSTER,
        taskDefinition: FAMILY,
        group: "service:worker",
        capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }],
        networkConfiguration: { awsvpcConfiguration: { subnets: config.subnets, securityGroups: config.securityGroups } },
      }),
    );
    const serviceArn = service.tasks?.[0]?.taskArn ?? "";
    const s = simulator({ durationMs: () => 100 });
    await s.start();
    await launch("Good", 1);

    await until(() => s.stats().succeeded === 1, "the launcher task to end");
    await sleep(300);

    expect(s.tasks().map((t) => t.taskArn)).to.not.include(serviceArn);
    const described = (await ecs.send(new DescribeTasksCommand({ cluster: CLUSTER, tasks: [serviceArn] }))).tasks?.[0];
    expect(described?.lastStatus).to.equal("RUNNING");
  });

  it("records a task stopped by someone else as failed, with that reason", async () => {
    const s = simulator({ durationMs: () => 60_000 });
    await s.start();
    const task = await launch("Good", 1);
    await until(() => s.stats().launched === 1, "the simulator to see the task");

    await ecs.send(new StopTaskCommand({ cluster: CLUSTER, task: task.taskArn, reason: "operator" }));

    await until(() => s.stats().failed === 1, "the simulator to notice");
    expect(s.tasks()[0]).to.include({ outcome: "failed", stoppedReason: EXTERNAL_STOP_REASON } satisfies Partial<SimTask>);
  });
});
