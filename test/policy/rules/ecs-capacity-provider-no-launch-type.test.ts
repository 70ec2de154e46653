/** policy/rules/ecs-capacity-provider-no-launch-type.ts: capacity providers and a launchType never together. */
import type { RecordedResource } from "../../../policy/testing/types";
import { R, retrainingRecording } from "../helpers/retraining";
import { T, editInput, service, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "ecs-capacity-provider-no-launch-type";

const network = { networkConfiguration: { subnets: ["subnet-a"], assignPublicIp: false } };
const spot = { capacityProviderStrategies: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }] };

describe(POLICY, () => {
  it("passes the good retraining recording (Fargate Spot strategies, no launchType)", async () => {
    // Prepare
    const rs = retrainingRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a service with a launchType and no capacity providers", async () => {
      // Prepare
      const rs = [service("api", { ...network, launchType: "FARGATE" })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a service with both", async () => {
      // Prepare
      const rs = [service("api", { ...network, ...spot, launchType: "FARGATE" })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.service, "api"),
        message: /ECS service 'api' uses capacity providers \(FARGATE_SPOT\) and launchType 'FARGATE'/,
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a service with capacity providers and a launchType",
        urn: R.service,
        message: /uses capacity providers \(FARGATE_SPOT\) and launchType 'FARGATE'/,
        mutate: (rs) => setInput(rs, R.service, "launchType", "FARGATE"),
      },
      {
        title: "a Scheduler ECS target with capacity providers and a launchType",
        urn: R.ecsSchedule,
        message: /remove launchType/,
        mutate: (rs) => editInput(rs, R.ecsSchedule, "target", (t) => ((t.ecsParameters as Record<string, unknown>).launchType = "FARGATE")),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = retrainingRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message });
      });
    }
  });
});
