/** policy/rules/ec2-terminate-tag-condition.ts: ec2:TerminateInstances only under a scoping resource-tag condition. */
import { expect } from "chai";
import type { EvaluateOptions } from "../../../policy/testing/evaluate";
import type { RecordedResource } from "../../../policy/testing/types";
import { resourceTagKeys } from "../../../policy/rules/ec2-terminate-tag-condition";
import { FU, TERMINATE_STATEMENT, editStatement, fleetRecording, fleetResource, fleetUrn } from "../helpers/fleet";
import { T, add, doc, find, managedPolicy, rolePolicy, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "ec2-terminate-tag-condition";

const unscopedPolicyUrn = fleetUrn(T.policy, "fleet-terminate-anything");
const inlineRoleUrn = fleetUrn(T.role, "fleet-inline-role");
const terminate = (condition?: Record<string, unknown>) => ({
  Effect: "Allow",
  Action: "ec2:TerminateInstances",
  Resource: "*",
  ...(condition ? { Condition: condition } : {}),
});

describe(POLICY, () => {
  it("passes the good fleet recording (TerminateInstances scoped by runs-fleet:managed)", async () => {
    // Prepare
    const rs = fleetRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  it("passes when the policy is handed back as a JSON string", async () => {
    // Prepare
    const rs = fleetRecording();
    setInput(rs, FU.housekeepingPolicy, "policy", JSON.stringify(find(rs, FU.housekeepingPolicy).inputs.policy));
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a managed Policy whose TerminateInstances is tag-scoped", async () => {
      // Prepare
      const rs = [managedPolicy("reaper", { policy: doc(terminate({ StringEquals: { "aws:ResourceTag/team": "ml" } })) })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a RolePolicy whose TerminateInstances has no condition", async () => {
      // Prepare
      const rs = [rolePolicy("reaper", { policy: doc(terminate()) })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.rolePolicy, "reaper"),
        message: /'reaper' Statement\[0\] allows ec2:TerminateInstances without/,
        also: [["iam-star-resource-unscopable-only", urnOf(T.rolePolicy, "reaper")]],
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void; options?: EvaluateOptions }[] = [
      {
        title: "TerminateInstances without its tag condition",
        urn: FU.housekeepingPolicy,
        message: /statement 'TerminateManagedInstances' allows ec2:TerminateInstances without a resource-tag condition/,
        mutate: (rs) => editStatement(rs, FU.housekeepingPolicy, "TerminateManagedInstances", (s) => delete s.Condition),
      },
      {
        title: "TerminateInstances scoped only by an IfExists condition (passes when the tag is absent)",
        urn: FU.housekeepingPolicy,
        message: /without a resource-tag condition/,
        mutate: (rs) =>
          editStatement(
            rs,
            FU.housekeepingPolicy,
            "TerminateManagedInstances",
            (s) => (s.Condition = { StringEqualsIfExists: { "aws:ResourceTag/runs-fleet:managed": "true" } }),
          ),
      },
      {
        title: 'TerminateInstances scoped by a Null condition ("true" means instances WITHOUT the tag)',
        urn: FU.housekeepingPolicy,
        message: /without a resource-tag condition that scopes it/,
        mutate: (rs) =>
          editStatement(
            rs,
            FU.housekeepingPolicy,
            "TerminateManagedInstances",
            (s) => (s.Condition = { Null: { "aws:ResourceTag/runs-fleet:managed": "true" } }),
          ),
      },
      {
        title: "TerminateInstances scoped by StringLike on a wildcard-only value (any tagged instance)",
        urn: FU.housekeepingPolicy,
        message: /without a resource-tag condition that scopes it/,
        mutate: (rs) =>
          editStatement(
            rs,
            FU.housekeepingPolicy,
            "TerminateManagedInstances",
            (s) => (s.Condition = { StringLike: { "aws:ResourceTag/runs-fleet:managed": "*" } }),
          ),
      },
      {
        title: "a managed Policy granting ec2:Terminate* with no condition",
        urn: unscopedPolicyUrn,
        message: /'fleet-terminate-anything' Statement\[0\] allows ec2:TerminateInstances/,
        mutate: (rs) =>
          add(
            rs,
            fleetResource(T.policy, "fleet-terminate-anything", {
              policy: { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: ["ec2:Terminate*"], Resource: "*" }] },
            }),
          ),
      },
      {
        title: "a Role's inline policy granting TerminateInstances with no condition",
        urn: inlineRoleUrn,
        message: /'fleet-inline-role' statement 'TerminateManagedInstances'/,
        mutate: (rs) => {
          const { Condition: _dropped, ...unscoped } = TERMINATE_STATEMENT;
          add(
            rs,
            fleetResource(T.role, "fleet-inline-role", {
              inlinePolicies: [{ name: "inline", policy: JSON.stringify({ Version: "2012-10-17", Statement: [unscoped] }) }],
            }),
          );
        },
      },
      {
        title: "a tag condition on a key the stack does not allow (config tagKeys)",
        urn: FU.housekeepingPolicy,
        message: /scopes ec2:TerminateInstances by tag runs-fleet:managed, not by one of encache:pool/,
        mutate: () => {},
        options: { config: { [POLICY]: { enforcementLevel: "mandatory", tagKeys: ["encache:pool"] } } },
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = fleetRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs, c.options);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message });
      });
    }
  });
});

describe("resourceTagKeys", () => {
  const cases: Array<[string, unknown, string[]]> = [
    ["aws:ResourceTag under StringEquals", { StringEquals: { "aws:ResourceTag/runs-fleet:managed": "true" } }, ["runs-fleet:managed"]],
    ["ec2:ResourceTag under StringLike", { StringLike: { "ec2:ResourceTag/team": "ml-*" } }, ["team"]],
    ["StringEqualsIgnoreCase scopes", { StringEqualsIgnoreCase: { "aws:ResourceTag/a": "B" } }, ["a"]],
    ["a list of values scopes when every value does", { StringEquals: { "aws:ResourceTag/a": ["b", "c"] } }, ["a"]],
    ["IfExists does not scope", { StringEqualsIfExists: { "aws:ResourceTag/a": "b" } }, []],
    ["Null does not scope (true = tag absent)", { Null: { "aws:ResourceTag/a": "true" } }, []],
    ["Null false does not scope the value", { Null: { "aws:ResourceTag/a": "false" } }, []],
    ["a wildcard-only StringLike value does not scope", { StringLike: { "aws:ResourceTag/a": "*" } }, []],
    ["a wildcard-only value among several does not scope", { StringLike: { "aws:ResourceTag/a": ["b", "?*"] } }, []],
    ["an empty list does not scope", { StringEquals: { "aws:ResourceTag/a": [] } }, []],
    ["a set operator does not scope", { "ForAnyValue:StringEquals": { "aws:ResourceTag/a": "b" } }, []],
    ["StringNotLike does not scope", { StringNotLike: { "aws:ResourceTag/a": "b" } }, []],
    ["negation does not scope", { StringNotEquals: { "aws:ResourceTag/a": "b" } }, []],
    ["a request tag is not a resource tag", { StringEquals: { "aws:RequestTag/a": "b" } }, []],
    ["no condition", undefined, []],
  ];
  for (const [title, condition, keys] of cases) {
    it(title, () => {
      // Act + Assess
      expect(resourceTagKeys(condition)).to.deep.equal(keys);
    });
  }
});
