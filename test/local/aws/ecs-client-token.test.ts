import { CreateClusterCommand, ECSClient, ListTasksCommand, RunTaskCommand, type RunTaskCommandInput } from "@aws-sdk/client-ecs";
import { EC2Client } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import { CLIENT_TOKEN_WINDOW_MS, conflictError, EcsClientTokenProxy, sameParameters, tokenKey } from "../../../local/aws/ecs-client-token";
import { createFargateWorld } from "../../integration/helpers/aws-world";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

const CLUSTER = "token-cluster";
const FAMILY = "strategy-dev";

describe("local ECS clientToken (as ECS documents it; moto ignores it)", () => {
  describe("pure helpers", () => {
    it("compares parameters without the token, whatever the key order", () => {
      expect(
        sameParameters(
          { clientToken: "a", cluster: "c", overrides: { x: 1, y: [2, { b: 1, a: 2 }] } },
          { overrides: { y: [2, { a: 2, b: 1 }], x: 1 }, cluster: "c", clientToken: "b" },
        ),
      ).to.equal(true);
      expect(sameParameters({ cluster: "c", count: 1 }, { cluster: "c", count: 2 })).to.equal(false);
    });

    const keys: Array<[string, Record<string, unknown>, string]> = [
      ["by the cluster's name", { cluster: "c1" }, "c1/t"],
      ["by the cluster's ARN, as its name", { cluster: "arn:aws:ecs:us-east-1:123456789012:cluster/c1" }, "c1/t"],
      ["in the default cluster when none is named", {}, "default/t"],
      ["in the default cluster when the name is empty", { cluster: "" }, "default/t"],
    ];
    for (const [name, request, key] of keys) it(`binds a token within its cluster: ${name}`, () => expect(tokenKey(request, "t")).to.equal(key));

    it("refuses a reused token in the shape of botocore's ConflictException (message, resourceIds)", () => {
      const c = conflictError("t", ["arn:task/1"]);
      expect(c.status).to.equal(400);
      expect(c.headers["x-amzn-errortype"]).to.equal("ConflictException");
      expect(JSON.parse(c.body)).to.deep.include({ __type: "ConflictException", resourceIds: ["arn:task/1"] });
    });
  });

  describe("against moto", () => {
    let proxy: EcsClientTokenProxy;
    let viaProxy: ECSClient;
    let direct: ECSClient;
    let nowMs: number;
    let input: RunTaskCommandInput;

    beforeEach(async () => {
      await resetMoto();
      nowMs = Date.parse("2024-01-01T00:00:00.000Z");
      proxy = new EcsClientTokenProxy({ target: motoEndpoint(), now: () => nowMs });
      viaProxy = new ECSClient({ endpoint: await proxy.start() });
      direct = new ECSClient({});
      const network = await createFargateWorld(direct, new EC2Client({}), { cluster: CLUSTER, family: FAMILY });
      input = {
        cluster: CLUSTER,
        taskDefinition: FAMILY,
        startedBy: "retraining-scheduler",
        clientToken: "origin-1",
        capacityProviderStrategy: [{ capacityProvider: "FARGATE", weight: 1 }],
        networkConfiguration: { awsvpcConfiguration: { subnets: network.subnets, securityGroups: network.securityGroups } },
      };
    });

    afterEach(async () => {
      await proxy.stop();
    });

    const tasksInMoto = async () => (await direct.send(new ListTasksCommand({ cluster: CLUSTER }))).taskArns ?? [];
    const run = async (i: RunTaskCommandInput) => (await viaProxy.send(new RunTaskCommand(i))).tasks?.map((t) => t.taskArn) ?? [];

    it("Fargate Spot without capacity: a FARGATE_SPOT RunTask gets ECS's capacity failure and starts nothing; FARGATE still runs; Spot tasks are remembered", async () => {
      // Prepare
      const spot = { ...input, clientToken: "spot-1", capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }] };
      proxy.refuseSpot(true);
      // Act
      const refused = await viaProxy.send(new RunTaskCommand(spot));
      const onDemand = await run({ ...input, clientToken: "od-1" });
      proxy.refuseSpot(false);
      const onSpot = await run(spot);
      // Assess
      expect(refused.tasks).to.deep.equal([]);
      expect(refused.failures?.[0]?.reason).to.match(/^Capacity is unavailable at this time/);
      expect(onDemand).to.have.length(1);
      expect(onSpot).to.have.length(1);
      expect(await tasksInMoto()).to.have.length(2);
      expect([...proxy.spotTasks]).to.deep.equal(onSpot);
      expect(proxy.counts.spotRefused).to.equal(1);
    });

    it("the same token with the same parameters within 24 h returns the same task and starts nothing new", async () => {
      const first = await run(input);
      nowMs += CLIENT_TOKEN_WINDOW_MS - 1;
      const again = await run(input);

      expect(again).to.deep.equal(first);
      expect(await tasksInMoto()).to.have.length(1);
      expect(proxy.counts).to.deep.include({ runTasks: 2, replayed: 1 });
    });

    it("the same token with other parameters: ConflictException naming the token's tasks", async () => {
      const [arn] = await run(input);

      const error = await viaProxy.send(new RunTaskCommand({ ...input, startedBy: "someone-else" })).then(
        () => undefined,
        (e: unknown) => e as { name?: string; resourceIds?: string[] },
      );

      expect(error?.name).to.equal("ConflictException");
      expect(error?.resourceIds).to.deep.equal([arn]);
      expect(await tasksInMoto()).to.have.length(1);
    });

    it("the same token in another cluster is another request: it starts a task there", async () => {
      // Prepare
      await direct.send(new CreateClusterCommand({ clusterName: "other-cluster", capacityProviders: ["FARGATE"] }));
      const first = await run(input);
      // Act
      const elsewhere = await run({ ...input, cluster: "other-cluster" });
      // Assess
      expect(elsewhere).to.have.length(1);
      expect(elsewhere).to.not.deep.equal(first);
      expect(proxy.counts).to.deep.include({ runTasks: 2, replayed: 0, conflicts: 0 });
    });

    it("concurrent calls with one token start one task", async () => {
      const answers = await Promise.all(Array.from({ length: 4 }, () => run(input)));

      expect(new Set(answers.flat()).size).to.equal(1);
      expect(await tasksInMoto()).to.have.length(1);
    });

    it("past the 24 h window (simulated clock) the token is forgotten: a second task, as on AWS", async () => {
      const first = await run(input);
      nowMs += CLIENT_TOKEN_WINDOW_MS;
      const later = await run(input);

      expect(later).to.not.deep.equal(first);
      expect(await tasksInMoto()).to.have.length(2);
    });

    it("calls without a token, and every other ECS call, pass through", async () => {
      await run({ ...input, clientToken: "a" });
      await run({ ...input, clientToken: "b" });

      expect((await viaProxy.send(new ListTasksCommand({ cluster: CLUSTER }))).taskArns).to.have.length(2);
    });
  });
});
