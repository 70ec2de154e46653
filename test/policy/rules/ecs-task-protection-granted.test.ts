/** policy/rules/ecs-task-protection-granted.ts: a task definition using scale-in protection has a task role allowed ecs:UpdateTaskProtection. */
import type { RecordedResource } from "../../../policy/testing/types";
import { W, setContainer, workerRecording } from "../helpers/worker";
import { T, doc, editInput, find, role, setInput, taskDefinition, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "ecs-task-protection-granted";

type Doc = { Statement: Record<string, unknown>[] };
const withoutProtectionGrant = (rs: RecordedResource[]) =>
  editInput<Doc>(rs, W.taskPolicy, "policy", (d) => (d.Statement = d.Statement.filter((s) => s.Sid !== "OwnTaskScaleInProtection")));

const container = JSON.stringify([
  {
    name: "app",
    memory: 512,
    readonlyRootFilesystem: true,
    user: "1000:1000",
    linuxParameters: { capabilities: { add: [], drop: ["ALL"] } },
    logConfiguration: { logDriver: "awslogs" },
  },
]);
/** A task definition tagged as using protection, whose task role has these inline statements. */
const protectedTask = (...statements: Record<string, unknown>[]) => [
  role("task", { inlinePolicies: [{ name: "own", policy: JSON.stringify(doc(...statements)) }] }),
  taskDefinition(
    "td",
    { containerDefinitions: container, tags: { "encache:task-protection": "agent-endpoint" } },
    { deps: { taskRoleArn: [urnOf(T.role, "task")] } },
  ),
];

describe(POLICY, () => {
  it("passes the good worker recording (marked task definition, role with ecs:UpdateTaskProtection, Spot service)", async () => {
    // Prepare
    const rs = workerRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  it("passes an unmarked task definition, which needs no protection grant", async () => {
    // Prepare
    const rs = workerRecording();
    setInput(rs, W.taskDefinition, "tags", { "encache:part": "worker" });
    setContainer(rs, (c) => (c.environment = []));
    withoutProtectionGrant(rs);
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  it("judges by the tag and the declared task role policy on a first preview (role ARNs and container definitions unknown)", async () => {
    // Prepare
    const rs = workerRecording();
    // Act
    const violations = await evaluate(rs, { mode: "first-preview" });
    // Assess: the container rule reads the declared container definitions, so nothing is left undecided.
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a protected task whose role allows ecs:UpdateTaskProtection", async () => {
      // Prepare
      const rs = protectedTask({ Effect: "Allow", Action: "ecs:UpdateTaskProtection", Resource: "arn:aws:ecs:eu-west-1:123456789012:task/c/*" });
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a protected task whose role only reads the protection", async () => {
      // Prepare
      const rs = protectedTask({ Effect: "Allow", Action: "ecs:GetTaskProtection", Resource: "arn:aws:ecs:eu-west-1:123456789012:task/c/*" });
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.taskDefinition, "td"),
        message: /task role 'task' is not allowed ecs:UpdateTaskProtection/,
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a marked task definition whose task role lacks ecs:UpdateTaskProtection",
        message: /uses task scale-in protection \(tag encache:task-protection\) but task role 'worker-task-role' is not allowed ecs:UpdateTaskProtection/,
        mutate: withoutProtectionGrant,
      },
      {
        title: "a grant cancelled by a Deny",
        message: /not allowed ecs:UpdateTaskProtection/,
        mutate: (rs) =>
          editInput<Doc>(rs, W.taskPolicy, "policy", (d) =>
            d.Statement.push({ Sid: "NoProtection", Effect: "Deny", Action: ["ecs:UpdateTaskProtection"], Resource: "*" }),
          ),
      },
      {
        title: "a task definition marked only by its container env var",
        message: /\(env ENCACHE_TASK_PROTECTION\)/,
        mutate: (rs) => {
          setInput(rs, W.taskDefinition, "tags", {});
          withoutProtectionGrant(rs);
        },
      },
      {
        title: "a marked task definition whose task role is not a Role in the stack",
        message: /taskRoleArn is not a Role in this stack/,
        mutate: (rs) => {
          find(rs, W.taskDefinition).propertyDependencies.taskRoleArn = [];
        },
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = workerRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: W.taskDefinition, message: c.message });
      });
    }
  });
});
