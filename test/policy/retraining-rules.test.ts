import { expect } from "chai";
import { evaluatePolicies, UNKNOWN } from "../../policy/testing/evaluate";
import type { RecordedResource, Violation } from "../../policy/testing/types";
import { policies } from "../../policy/policies";
import { find, setInput } from "./fixtures/ingest";
import { R, retrainingRecording } from "./fixtures/retraining";

async function run(mutate: (rs: RecordedResource[]) => void = () => {}): Promise<Violation[]> {
  const rs = retrainingRecording();
  mutate(rs);
  return evaluatePolicies(rs, policies);
}

/** Deep-edits one input of a recorded resource (inputs and outputs alike). */
function edit(rs: RecordedResource[], urn: string, key: string, change: (v: Record<string, unknown>) => void): void {
  const value = structuredClone(find(rs, urn).inputs[key]) as Record<string, unknown>;
  change(value);
  setInput(rs, urn, key, value);
}

type Statement = Record<string, unknown>;
const passRole = (policy: Record<string, unknown>): Statement => (policy.Statement as Statement[])[1] as Statement;
const ecsParameters = (target: Record<string, unknown>) => target.ecsParameters as Record<string, unknown>;

describe("retraining rules: ECS networking, capacity providers, PassRole (plus PITR and schedule DLQ on its resources)", () => {
  it("the good fixture has no violations", async () => {
    expect(await run()).to.deep.equal([]);
  });

  it("PassRole on role ARNs that are still unknown (first preview) passes", async () => {
    const violations = await run((rs) =>
      edit(rs, R.launcherPolicy, "policy", (p) => (passRole(p).Resource = [UNKNOWN.unknownStringValue, UNKNOWN.unknownStringValue])),
    );
    expect(violations.filter((v) => v.policy === "iam-passrole-scoped")).to.deep.equal([]);
  });

  const cases: Array<{ title: string; rule: string; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }> = [
    {
      title: "a service that assigns a public IP",
      rule: "ecs-no-public-ip",
      urn: R.service,
      message: /ECS service 'worker-service' must set networkConfiguration.assignPublicIp: false/,
      mutate: (rs) => edit(rs, R.service, "networkConfiguration", (n) => (n.assignPublicIp = true)),
    },
    {
      title: "a service that leaves assignPublicIp unset",
      rule: "ecs-no-public-ip",
      urn: R.service,
      message: /explicitly/,
      mutate: (rs) => edit(rs, R.service, "networkConfiguration", (n) => delete n.assignPublicIp),
    },
    {
      title: "a Scheduler ECS target with a public IP",
      rule: "ecs-no-public-ip",
      urn: R.ecsSchedule,
      message: /Schedule 'strategy-direct' \(ECS target\)/,
      mutate: (rs) => edit(rs, R.ecsSchedule, "target", (t) => ((ecsParameters(t).networkConfiguration as Record<string, unknown>).assignPublicIp = true)),
    },
    {
      title: "an EventBridge ECS target without network configuration",
      rule: "ecs-no-public-ip",
      urn: R.eventTarget,
      message: /Event target 'strategy-on-event' \(ECS target\) has no networkConfiguration/,
      mutate: (rs) => edit(rs, R.eventTarget, "ecsTarget", (e) => delete e.networkConfiguration),
    },
    {
      title: "a service with capacity providers and a launchType",
      rule: "ecs-capacity-provider-no-launch-type",
      urn: R.service,
      message: /uses capacity providers \(FARGATE_SPOT\) and launchType 'FARGATE'/,
      mutate: (rs) => setInput(rs, R.service, "launchType", "FARGATE"),
    },
    {
      title: "a Scheduler ECS target with capacity providers and a launchType",
      rule: "ecs-capacity-provider-no-launch-type",
      urn: R.ecsSchedule,
      message: /remove launchType/,
      mutate: (rs) => edit(rs, R.ecsSchedule, "target", (t) => (ecsParameters(t).launchType = "FARGATE")),
    },
    {
      title: "PassRole on *",
      rule: "iam-passrole-scoped",
      urn: R.launcherPolicy,
      message: /PassStrategyTaskRoles grants iam:PassRole on \*/,
      mutate: (rs) => edit(rs, R.launcherPolicy, "policy", (p) => (passRole(p).Resource = "*")),
    },
    {
      title: "PassRole on a wildcard role pattern",
      rule: "iam-passrole-scoped",
      urn: R.launcherPolicy,
      message: /role\/retraining-\*/,
      mutate: (rs) => edit(rs, R.launcherPolicy, "policy", (p) => (passRole(p).Resource = ["arn:aws:iam::123456789012:role/retraining-*"])),
    },
    {
      title: "PassRole through iam:Pass* without iam:PassedToService",
      rule: "iam-passrole-scoped",
      urn: R.launcherPolicy,
      message: /without an iam:PassedToService condition/,
      mutate: (rs) =>
        edit(rs, R.launcherPolicy, "policy", (p) => {
          passRole(p).Action = ["iam:Pass*"];
          delete passRole(p).Condition;
        }),
    },
    {
      title: "the state table without PITR (existing rule, retraining resource)",
      rule: "dynamodb-table-pitr",
      urn: R.table,
      message: /'retraining-state' must enable point-in-time recovery/,
      mutate: (rs) => setInput(rs, R.table, "pointInTimeRecovery", { enabled: false }),
    },
    {
      title: "an ECS schedule without a DLQ (existing rule, retraining resource)",
      rule: "scheduled-target-retry-and-dlq",
      urn: R.ecsSchedule,
      message: /no dead-letter queue/,
      mutate: (rs) => edit(rs, R.ecsSchedule, "target", (t) => delete t.deadLetterConfig),
    },
  ];

  for (const c of cases) {
    it(`${c.title}: only ${c.rule} fires, on ${c.urn.split("::").pop()}`, async () => {
      const violations = await run(c.mutate);
      expect(violations.map((v) => `${v.policy} ${v.urn}`)).to.deep.equal([`${c.rule} ${c.urn}`]);
      expect(violations[0]?.message).to.match(c.message);
      expect(violations[0]?.enforcementLevel).to.equal("mandatory");
    });
  }

  it("PassRole without PassedToService passes when requirePassedToService is false", async () => {
    const rs = retrainingRecording();
    edit(rs, R.launcherPolicy, "policy", (p) => delete passRole(p).Condition);
    const violations = await evaluatePolicies(rs, policies, { config: { "iam-passrole-scoped": { enforcementLevel: "mandatory", requirePassedToService: false } } });
    expect(violations).to.deep.equal([]);
  });
});
