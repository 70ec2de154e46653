import { expect } from "chai";
import { evaluatePolicies, UNKNOWN } from "../../policy/testing/evaluate";
import type { RecordedResource, Violation } from "../../policy/testing/types";
import { policies } from "../../policy/policies";
import { find, setInput } from "./fixtures/ingest";
import { setContainer, W, workerRecording } from "./fixtures/worker";

async function run(mutate: (rs: RecordedResource[]) => void = () => {}): Promise<Violation[]> {
  const rs = workerRecording();
  mutate(rs);
  return evaluatePolicies(rs, policies);
}

type Doc = { Statement: Array<Record<string, unknown>> };
const taskPolicy = (rs: RecordedResource[]) => structuredClone(find(rs, W.taskPolicy).inputs.policy) as Doc;

describe("worker rules: task scale-in protection grant, hardened ECS task definitions", () => {
  it("the good fixture (marked task definition, role with ecs:UpdateTaskProtection, Spot service) has no violations", async () => {
    expect(await run()).to.deep.equal([]);
  });

  it("on a first preview (role ARNs and container definitions unknown) the tag still lets the grant rule judge", async () => {
    const violations = await run((rs) => {
      setInput(rs, W.taskDefinition, "taskRoleArn", UNKNOWN.unknownStringValue);
      setInput(rs, W.taskDefinition, "containerDefinitions", UNKNOWN.unknownStringValue);
    });
    expect(violations.filter((v) => v.enforcementLevel === "mandatory")).to.deep.equal([]);
    expect(violations.map((v) => v.policy)).to.deep.equal(["ecs-task-definition-hardened"]);
    expect(violations[0]!.message).to.match(/can't run policy 'ecs-task-definition-hardened' during preview/);
  });

  it("an unmarked task definition needs no protection grant", async () => {
    const violations = await run((rs) => {
      setInput(rs, W.taskDefinition, "tags", { "encache:part": "worker" });
      setContainer(rs, (c) => (c.environment = []));
      const doc = taskPolicy(rs);
      doc.Statement = doc.Statement.filter((s) => s.Sid !== "OwnTaskScaleInProtection");
      setInput(rs, W.taskPolicy, "policy", doc);
    });
    expect(violations).to.deep.equal([]);
  });

  const withoutProtectionGrant = (rs: RecordedResource[]) => {
    const doc = taskPolicy(rs);
    doc.Statement = doc.Statement.filter((s) => s.Sid !== "OwnTaskScaleInProtection");
    setInput(rs, W.taskPolicy, "policy", doc);
  };

  const cases: Array<{ title: string; rule: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }> = [
    {
      title: "a marked task definition whose task role lacks ecs:UpdateTaskProtection",
      rule: "ecs-task-protection-granted",
      message: /uses task scale-in protection \(tag encache:task-protection\) but task role 'worker-task-role' is not allowed ecs:UpdateTaskProtection/,
      mutate: withoutProtectionGrant,
    },
    {
      title: "a grant cancelled by a Deny",
      rule: "ecs-task-protection-granted",
      message: /not allowed ecs:UpdateTaskProtection/,
      mutate: (rs) => {
        const doc = taskPolicy(rs);
        doc.Statement.push({ Sid: "NoProtection", Effect: "Deny", Action: ["ecs:UpdateTaskProtection"], Resource: "*" });
        setInput(rs, W.taskPolicy, "policy", doc);
      },
    },
    {
      title: "a task definition marked only by its container env var",
      rule: "ecs-task-protection-granted",
      message: /\(env ENCACHE_TASK_PROTECTION\)/,
      mutate: (rs) => {
        setInput(rs, W.taskDefinition, "tags", {});
        withoutProtectionGrant(rs);
      },
    },
    {
      title: "a marked task definition whose task role is not a Role in the stack",
      rule: "ecs-task-protection-granted",
      message: /taskRoleArn is not a Role in this stack/,
      mutate: (rs) => {
        find(rs, W.taskDefinition).propertyDependencies.taskRoleArn = [];
      },
    },
    {
      title: "a privileged container",
      rule: "ecs-task-definition-hardened",
      message: /container 'worker' must not be privileged/,
      mutate: (rs) => setContainer(rs, (c) => (c.privileged = true)),
    },
    {
      title: "a container without a log configuration",
      rule: "ecs-task-definition-hardened",
      message: /container 'worker' has no logConfiguration/,
      mutate: (rs) => setContainer(rs, (c) => delete c.logConfiguration),
    },
    {
      title: "a container without a memory limit",
      rule: "ecs-task-definition-hardened",
      message: /container 'worker' has no container-level memory limit/,
      mutate: (rs) => setContainer(rs, (c) => delete c.memory),
    },
  ];

  for (const c of cases) {
    it(`catches ${c.title}, on the task definition only`, async () => {
      const violations = await run(c.mutate);
      expect(violations.map((v) => [v.policy, v.urn]), JSON.stringify(violations)).to.deep.equal([[c.rule, W.taskDefinition]]);
      expect(violations[0]!.enforcementLevel).to.equal("mandatory");
      expect(violations[0]!.message).to.match(c.message);
    });
  }
});
