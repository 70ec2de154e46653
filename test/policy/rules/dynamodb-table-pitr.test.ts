/** policy/rules/dynamodb-table-pitr.ts: every DynamoDB table enables point-in-time recovery. */
import type { RecordedResource } from "../../../policy/testing/types";
import { FU, fleetRecording } from "../helpers/fleet";
import { X, platformRecording } from "../helpers/platform";
import { R, retrainingRecording } from "../helpers/retraining";
import { T, setInput, table, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "dynamodb-table-pitr";

describe(POLICY, () => {
  for (const [part, recording] of [
    ["platform", platformRecording],
    ["fleet", fleetRecording],
    ["retraining", retrainingRecording],
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
    it("passes a table with PITR enabled", async () => {
      // Prepare
      const rs = [table("state", { pointInTimeRecovery: { enabled: true }, serverSideEncryption: { enabled: true } })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a table with PITR disabled", async () => {
      // Prepare
      const rs = [table("state", { pointInTimeRecovery: { enabled: false }, serverSideEncryption: { enabled: true } })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.table, "state"),
        message: /Table 'state' must enable point-in-time recovery/,
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; recording: () => RecordedResource[]; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a table without PITR",
        recording: platformRecording,
        urn: X.table,
        message: /Table 'state' must enable point-in-time recovery/,
        mutate: (rs) => setInput(rs, X.table, "pointInTimeRecovery", { enabled: false }),
      },
      {
        title: "a table that never mentions PITR",
        recording: platformRecording,
        urn: X.table,
        message: /point-in-time recovery/,
        mutate: (rs) => setInput(rs, X.table, "pointInTimeRecovery", undefined),
      },
      {
        title: "the fleet's jobs table without PITR",
        recording: fleetRecording,
        urn: FU.jobs,
        message: /Table 'fleet-jobs' must enable point-in-time recovery/,
        mutate: (rs) => setInput(rs, FU.jobs, "pointInTimeRecovery", { enabled: false }),
      },
      {
        title: "the retraining state table without PITR",
        recording: retrainingRecording,
        urn: R.table,
        message: /'retraining-state' must enable point-in-time recovery/,
        mutate: (rs) => setInput(rs, R.table, "pointInTimeRecovery", { enabled: false }),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = c.recording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message });
      });
    }
  });
});
