import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { expect } from "chai";
import { instancesWithActiveJobs } from "../../../../functions/fleet/tasks/active-jobs";
import { TABLE } from "../../helpers/fleet-deps";
import { harness } from "../../helpers/fleet-tasks";

describe("instancesWithActiveJobs", () => {
  it("collects the instance ids of the pages read, skipping an item that carries none", async () => {
    // Prepare: an answer with an item lacking instance_id (not one the sparse index holds) beside two that carry one.
    const t = harness();
    t.dynamodbMock.on(QueryCommand).resolves({ Items: [{ instance_id: { S: "i-1" } }, { status: { S: "running" } }, { instance_id: { S: "i-2" } }], Count: 3 });
    // Act
    const busy = await instancesWithActiveJobs(t.clients.dynamodb, TABLE);
    // Assess
    expect([...busy].sort()).to.deep.equal(["i-1", "i-2"]);
  });
});
