/** policy/rules/ecs-no-public-ip.ts: ECS services and ECS targets run tasks in private subnets (assignPublicIp: false, explicitly). */
import type { RecordedResource } from "../../../policy/testing/types";
import { R, retrainingRecording } from "../helpers/retraining";
import { T, editInput, service, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "ecs-no-public-ip";

const ecsParameters = (target: Record<string, unknown>) => target.ecsParameters as Record<string, unknown>;

describe(POLICY, () => {
  it("passes the good retraining recording (service, schedule and event target in private subnets)", async () => {
    // Prepare
    const rs = retrainingRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a service with assignPublicIp: false", async () => {
      // Prepare
      const rs = [service("api", { networkConfiguration: { subnets: ["subnet-a"], assignPublicIp: false } })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a service with assignPublicIp: true", async () => {
      // Prepare
      const rs = [service("api", { networkConfiguration: { subnets: ["subnet-a"], assignPublicIp: true } })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.service, "api"),
        message: /ECS service 'api' must set networkConfiguration.assignPublicIp: false/,
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a service that assigns a public IP",
        urn: R.service,
        message: /ECS service 'worker-service' must set networkConfiguration.assignPublicIp: false/,
        mutate: (rs) => editInput(rs, R.service, "networkConfiguration", (n) => (n.assignPublicIp = true)),
      },
      {
        title: "a service that leaves assignPublicIp unset",
        urn: R.service,
        message: /explicitly/,
        mutate: (rs) => editInput(rs, R.service, "networkConfiguration", (n) => delete n.assignPublicIp),
      },
      {
        title: "a Scheduler ECS target with a public IP",
        urn: R.ecsSchedule,
        message: /Schedule 'strategy-direct' \(ECS target\)/,
        mutate: (rs) =>
          editInput(rs, R.ecsSchedule, "target", (t) => ((ecsParameters(t).networkConfiguration as Record<string, unknown>).assignPublicIp = true)),
      },
      {
        title: "an EventBridge ECS target without network configuration",
        urn: R.eventTarget,
        message: /Event target 'strategy-on-event' \(ECS target\) has no networkConfiguration/,
        mutate: (rs) => editInput(rs, R.eventTarget, "ecsTarget", (e) => delete e.networkConfiguration),
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
