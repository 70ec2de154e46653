/** policy/rules/ecs-task-definition-hardened.ts: containers are unprivileged, logged and memory-limited. */
import type { RecordedResource } from "../../../policy/testing/types";
import { W, setContainer, workerRecording } from "../helpers/worker";
import { T, taskDefinition, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "ecs-task-definition-hardened";

describe(POLICY, () => {
  it("passes the good worker recording (the worker container)", async () => {
    // Prepare
    const rs = workerRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a logged, memory-limited (and least-privileged) container", async () => {
      // Prepare
      const rs = [
        taskDefinition("td", {
          containerDefinitions: JSON.stringify([
            {
              name: "app",
              memory: 512,
              readonlyRootFilesystem: true,
              user: "1000:1000",
              linuxParameters: { capabilities: { add: [], drop: ["ALL"] } },
              logConfiguration: { logDriver: "awslogs" },
            },
          ]),
        }),
      ];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a task definition with no containers", async () => {
      // Prepare
      const rs = [taskDefinition("td", { containerDefinitions: "[]" })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.taskDefinition, "td"),
        message: /Task definition 'td' has no container definitions/,
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      { title: "a privileged container", message: /container 'worker' must not be privileged/, mutate: (rs) => setContainer(rs, (c) => (c.privileged = true)) },
      {
        title: "a container without a log configuration",
        message: /container 'worker' has no logConfiguration/,
        mutate: (rs) => setContainer(rs, (c) => delete c.logConfiguration),
      },
      {
        title: "a container without a memory limit",
        message: /container 'worker' has no container-level memory limit/,
        mutate: (rs) => setContainer(rs, (c) => delete c.memory),
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
