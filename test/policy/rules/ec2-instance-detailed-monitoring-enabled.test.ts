/** policy/rules/ec2-instance-detailed-monitoring-enabled.ts: 1-minute metrics for the GPU and for every pool instance. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { P, poolRecording } from "../helpers/pool";
import { T, editInput, instance, launchTemplate, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "ec2-instance-detailed-monitoring-enabled";

describe(POLICY, () => {
  for (const [part, recording] of [
    ["ingest (the GPU instance)", ingestRecording],
    ["pool (the gpu-small launch template)", poolRecording],
  ] as const) {
    it(`passes the good ${part} recording`, async () => {
      // Prepare
      const rs = recording();
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });
  }

  describe("built in one line", () => {
    const cases: { title: string; rs: () => RecordedResource[]; urn: string | undefined; message?: RegExp }[] = [
      { title: "passes an instance with monitoring on", rs: () => [instance("box", { monitoring: true })], urn: undefined },
      {
        title: "passes a launch template with monitoring.enabled (as a boolean)",
        rs: () => [launchTemplate("lt", { monitoring: { enabled: true } })],
        urn: undefined,
      },
      {
        title: "fails an instance that leaves monitoring unset (EC2's default is basic, 5-minute)",
        rs: () => [instance("box", {})],
        urn: urnOf(T.instance, "box"),
        message: /^Instance 'box' must enable detailed monitoring/,
      },
      { title: "fails an instance with monitoring false", rs: () => [instance("box", { monitoring: false })], urn: urnOf(T.instance, "box") },
      {
        title: "fails a launch template without a monitoring block",
        rs: () => [launchTemplate("lt", {})],
        urn: urnOf(T.launchTemplate, "lt"),
        message: /^Launch template 'lt' must enable detailed monitoring/,
      },
      {
        title: "fails a launch template with monitoring.enabled false",
        rs: () => [launchTemplate("lt", { monitoring: { enabled: false } })],
        urn: urnOf(T.launchTemplate, "lt"),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = c.rs();
        // Act
        const violations = await evaluate(rs);
        // Assess: the bare resources trip the hardening rules too; only this rule is asserted on.
        const mine = violations.filter((v) => v.policy === POLICY);
        if (c.urn === undefined) expectNoViolations(mine);
        else expectViolation(mine, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message });
      });
    }
  });

  describe("fails, in both modes", () => {
    const cases: { title: string; recording: () => RecordedResource[]; urn: string; mutate: (rs: RecordedResource[]) => void }[] = [
      { title: "the GPU without detailed monitoring", recording: ingestRecording, urn: U.gpu, mutate: (rs) => setInput(rs, U.gpu, "monitoring", undefined) },
      {
        title: "the pool's launch template with monitoring off",
        recording: poolRecording,
        urn: P.launchTemplate,
        mutate: (rs) => editInput(rs, P.launchTemplate, "monitoring", (m) => (m.enabled = false)),
      },
    ];
    for (const mode of ["update", "first-preview"] as Mode[]) {
      for (const c of cases) {
        it(`${c.title} (${mode})`, async () => {
          // Prepare
          const rs = c.recording();
          c.mutate(rs);
          // Act
          const violations = await evaluate(rs, { mode });
          // Assess
          expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: /must enable detailed monitoring/ });
        });
      }
    }
  });
});
