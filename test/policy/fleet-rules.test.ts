import { expect } from "chai";
import { evaluatePolicies, type EvaluateOptions, UNKNOWN } from "../../policy/testing/evaluate";
import type { RecordedResource, Violation } from "../../policy/testing/types";
import { policies } from "../../policy/policies";
import { resourceTagKeys } from "../../policy/rules/ec2-terminate-tag-condition";
import { addFleet, editStatement, findFleet, fleetRecording, fleetUrn, FT, FU, setFleetInput, TERMINATE_STATEMENT } from "./fixtures/fleet";

async function run(mutate: (rs: RecordedResource[]) => void = () => {}, options: EvaluateOptions = {}): Promise<Violation[]> {
  const rs = fleetRecording();
  mutate(rs);
  return evaluatePolicies(rs, policies, options);
}

const unscopedPolicyUrn = fleetUrn(FT.policy, "fleet-terminate-anything");
const inlineRoleUrn = fleetUrn(FT.role, "fleet-inline-role");
const plainTableUrn = fleetUrn(FT.table, "fleet-cache");

describe("fleet rules: ec2-terminate-tag-condition, job-table-ttl, dynamodb-table-pitr", () => {
  it("the good fleet fixture has no violations", async () => {
    expect(await run()).to.deep.equal([]);
  });

  it("passes on a first preview, when the table ARN in the roles is still unknown", async () => {
    const violations = await run((rs) => {
      for (const urn of [FU.housekeepingPolicy, FU.terminationPolicy]) {
        const doc = structuredClone(findFleet(rs, urn).inputs.policy) as { Statement: Record<string, unknown>[] };
        for (const s of doc.Statement) if (String(s.Resource).includes("dynamodb")) s.Resource = UNKNOWN.unknownStringValue;
        setFleetInput(rs, urn, "policy", doc);
      }
    });
    expect(violations).to.deep.equal([]);
  });

  it("passes when a policy is handed back as a JSON string", async () => {
    const violations = await run((rs) => setFleetInput(rs, FU.housekeepingPolicy, "policy", JSON.stringify(findFleet(rs, FU.housekeepingPolicy).inputs.policy)));
    expect(violations).to.deep.equal([]);
  });

  it("ignores a table without the jobs marker even when it has no TTL", async () => {
    const violations = await run((rs) =>
      addFleet(rs, {
        urn: plainTableUrn,
        type: FT.table,
        name: "fleet-cache",
        inputs: { hashKey: "k", attributes: [{ name: "k", type: "S" }], pointInTimeRecovery: { enabled: true }, tags: { "encache:part": "fleet" } },
      }),
    );
    expect(violations).to.deep.equal([]);
  });

  const cases: Array<{ title: string; rule: string; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void; options?: EvaluateOptions }> = [
    {
      title: "TerminateInstances without its tag condition",
      rule: "ec2-terminate-tag-condition",
      urn: FU.housekeepingPolicy,
      message: /statement 'TerminateManagedInstances' allows ec2:TerminateInstances without a resource-tag condition/,
      mutate: (rs) => editStatement(rs, FU.housekeepingPolicy, "TerminateManagedInstances", (s) => delete s.Condition),
    },
    {
      title: "TerminateInstances scoped only by an IfExists condition (passes when the tag is absent)",
      rule: "ec2-terminate-tag-condition",
      urn: FU.housekeepingPolicy,
      message: /without a resource-tag condition/,
      mutate: (rs) =>
        editStatement(rs, FU.housekeepingPolicy, "TerminateManagedInstances", (s) => (s.Condition = { StringEqualsIfExists: { "aws:ResourceTag/runs-fleet:managed": "true" } })),
    },
    {
      title: "TerminateInstances scoped by a Null condition (\"true\" means instances WITHOUT the tag)",
      rule: "ec2-terminate-tag-condition",
      urn: FU.housekeepingPolicy,
      message: /without a resource-tag condition that scopes it/,
      mutate: (rs) =>
        editStatement(rs, FU.housekeepingPolicy, "TerminateManagedInstances", (s) => (s.Condition = { Null: { "aws:ResourceTag/runs-fleet:managed": "true" } })),
    },
    {
      title: "TerminateInstances scoped by StringLike on a wildcard-only value (any tagged instance)",
      rule: "ec2-terminate-tag-condition",
      urn: FU.housekeepingPolicy,
      message: /without a resource-tag condition that scopes it/,
      mutate: (rs) =>
        editStatement(rs, FU.housekeepingPolicy, "TerminateManagedInstances", (s) => (s.Condition = { StringLike: { "aws:ResourceTag/runs-fleet:managed": "*" } })),
    },
    {
      title: "a managed Policy granting ec2:Terminate* with no condition",
      rule: "ec2-terminate-tag-condition",
      urn: unscopedPolicyUrn,
      message: /'fleet-terminate-anything' Statement\[0\] allows ec2:TerminateInstances/,
      mutate: (rs) =>
        addFleet(rs, {
          urn: unscopedPolicyUrn,
          type: FT.policy,
          name: "fleet-terminate-anything",
          inputs: { policy: { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: ["ec2:Terminate*"], Resource: "*" }] } },
        }),
    },
    {
      title: "a Role's inline policy granting TerminateInstances with no condition",
      rule: "ec2-terminate-tag-condition",
      urn: inlineRoleUrn,
      message: /'fleet-inline-role' statement 'TerminateManagedInstances'/,
      mutate: (rs) => {
        const { Condition: _dropped, ...unscoped } = TERMINATE_STATEMENT;
        addFleet(rs, {
          urn: inlineRoleUrn,
          type: FT.role,
          name: "fleet-inline-role",
          inputs: { inlinePolicies: [{ name: "inline", policy: JSON.stringify({ Version: "2012-10-17", Statement: [unscoped] }) }] },
        });
      },
    },
    {
      title: "a tag condition on a key the stack does not allow (config tagKeys)",
      rule: "ec2-terminate-tag-condition",
      urn: FU.housekeepingPolicy,
      message: /scopes ec2:TerminateInstances by tag runs-fleet:managed, not by one of encache:pool/,
      mutate: () => {},
      options: { config: { "ec2-terminate-tag-condition": { enforcementLevel: "mandatory", tagKeys: ["encache:pool"] } } },
    },
    {
      title: "a jobs table without TTL",
      rule: "job-table-ttl",
      urn: FU.jobs,
      message: /Job table 'fleet-jobs' \(tag encache:table-role=jobs\) must expire its records/,
      mutate: (rs) => setFleetInput(rs, FU.jobs, "ttl", undefined),
    },
    {
      title: "a jobs table whose tag AND TTL are dropped (recognised by the function env that reads it)",
      rule: "job-table-ttl",
      urn: FU.jobs,
      message: /Job table 'fleet-jobs' \(function 'fleet-termination-consumer' env RUNS_FLEET_JOBS_TABLE\) must expire its records/,
      mutate: (rs) => {
        setFleetInput(rs, FU.jobs, "ttl", undefined);
        setFleetInput(rs, FU.jobs, "tags", { "encache:part": "fleet" });
      },
    },
    {
      title: "an untagged jobs table without TTL on a first preview (the env value, the table name, still unknown)",
      rule: "job-table-ttl",
      urn: FU.jobs,
      message: /env RUNS_FLEET_JOBS_TABLE/,
      mutate: (rs) => {
        setFleetInput(rs, FU.jobs, "ttl", undefined);
        setFleetInput(rs, FU.jobs, "tags", { "encache:part": "fleet" });
        setFleetInput(rs, FU.terminationFunction, "environment", { variables: { RUNS_FLEET_JOBS_TABLE: UNKNOWN.unknownStringValue } });
      },
    },
    {
      title: "a jobs table with TTL disabled",
      rule: "job-table-ttl",
      urn: FU.jobs,
      message: /ttl.enabled/,
      mutate: (rs) => setFleetInput(rs, FU.jobs, "ttl", { attributeName: "expires_at", enabled: false }),
    },
    {
      title: "a jobs table without PITR (the existing rule, on the fleet's table)",
      rule: "dynamodb-table-pitr",
      urn: FU.jobs,
      message: /Table 'fleet-jobs' must enable point-in-time recovery/,
      mutate: (rs) => setFleetInput(rs, FU.jobs, "pointInTimeRecovery", { enabled: false }),
    },
    {
      title: "a housekeeping schedule without a dead-letter queue (the existing rule, on a fleet schedule)",
      rule: "scheduled-target-retry-and-dlq",
      urn: FU.schedule,
      message: /no dead-letter queue/,
      mutate: (rs) => {
        const target = structuredClone(findFleet(rs, FU.schedule).inputs.target) as Record<string, unknown>;
        delete target.deadLetterConfig;
        setFleetInput(rs, FU.schedule, "target", target);
      },
    },
  ];

  for (const c of cases) {
    it(`catches ${c.title}`, async () => {
      const violations = await run(c.mutate, c.options);
      expect(violations.map((v) => [v.policy, v.urn]), JSON.stringify(violations)).to.deep.equal([[c.rule, c.urn]]);
      expect(violations[0]!.enforcementLevel).to.equal("mandatory");
      expect(violations[0]!.message).to.match(c.message);
    });
  }
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
      expect(resourceTagKeys(condition)).to.deep.equal(keys);
    });
  }
});
