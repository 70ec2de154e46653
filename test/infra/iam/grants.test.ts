import { expect } from "chai";
import type { Grant } from "../../../functions/shared/grants";
import { statementsFor } from "../../../infra/iam/grants";

describe("statementsFor: a role's statements derived from the grants beside the code", () => {
  const grants = [
    { sid: "Read", actions: ["s3:GetObject"], resource: "bucket" },
    { sid: "Pass", actions: ["iam:PassRole"], resource: "role", condition: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } } },
  ] as const satisfies readonly Grant[];

  it("makes one statement per grant, in order, with the grant's Sid and actions and the binding's resource", () => {
    // Act
    const statements = statementsFor(grants, { bucket: { resource: "arn:bucket" }, role: { resource: ["arn:a", "arn:b"] } });

    // Assess
    expect(statements).to.deep.equal([
      { Sid: "Read", Effect: "Allow", Action: ["s3:GetObject"], Resource: "arn:bucket" },
      {
        Sid: "Pass",
        Effect: "Allow",
        Action: ["iam:PassRole"],
        Resource: ["arn:a", "arn:b"],
        Condition: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
      },
    ]);
  });

  it("merges the grant's conditions with the binding's, operator by operator", () => {
    // Act
    const [, pass] = statementsFor(grants, {
      bucket: { resource: "arn:bucket" },
      role: { resource: "arn:a", condition: { StringEquals: { "aws:ResourceTag/team": "ml" }, ArnEquals: { "ecs:cluster": "arn:c" } } },
    });

    // Assess
    expect(pass!.Condition).to.deep.equal({
      StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com", "aws:ResourceTag/team": "ml" },
      ArnEquals: { "ecs:cluster": "arn:c" },
    });
  });

  it("never shares the grant's action list with the statement (editing one cannot change the other)", () => {
    const [read] = statementsFor(grants, { bucket: { resource: "arn:bucket" }, role: { resource: "arn:a" } });
    expect(read!.Action).to.not.equal(grants[0].actions);
  });
});
