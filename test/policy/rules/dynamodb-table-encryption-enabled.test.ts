/** policy/rules/dynamodb-table-encryption-enabled.ts: every DynamoDB table encrypts with a KMS key. */
import type { RecordedResource } from "../../../policy/testing/types";
import { FU, fleetRecording } from "../helpers/fleet";
import { X, platformRecording } from "../helpers/platform";
import { R, retrainingRecording } from "../helpers/retraining";
import { T, setInput, table, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "dynamodb-table-encryption-enabled";
const pitr = { pointInTimeRecovery: { enabled: true } };

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
    const cases: { title: string; sse: unknown; fails: boolean }[] = [
      { title: "passes a table encrypted with the AWS-managed key", sse: { enabled: true }, fails: false },
      { title: "passes a table encrypted with a customer key", sse: { enabled: true, kmsKeyArn: "arn:aws:kms:us-east-1:123456789012:key/k" }, fails: false },
      { title: "fails a table that leaves encryption to DynamoDB's AWS-owned key", sse: undefined, fails: true },
      { title: "fails a table with serverSideEncryption.enabled false", sse: { enabled: false }, fails: true },
      { title: "fails a table with the string 'true' (the provider takes a boolean)", sse: { enabled: "true" }, fails: true },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = [table("state", c.sse === undefined ? pitr : { ...pitr, serverSideEncryption: c.sse })];
        // Act
        const violations = await evaluate(rs);
        // Assess
        if (c.fails)
          expectViolation(violations, {
            policy: POLICY,
            level: "mandatory",
            urn: urnOf(T.table, "state"),
            message: /^Table 'state' must enable server-side encryption with a KMS key/,
          });
        else expectNoViolations(violations);
      });
    }
  });

  describe("fails, in both modes", () => {
    const cases: { title: string; recording: () => RecordedResource[]; urn: string }[] = [
      { title: "the platform's state table", recording: platformRecording, urn: X.table },
      { title: "the fleet's jobs table", recording: fleetRecording, urn: FU.jobs },
      { title: "the retraining state table", recording: retrainingRecording, urn: R.table },
    ];
    for (const mode of ["update", "first-preview"] as Mode[]) {
      for (const c of cases) {
        it(`${c.title} without encryption (${mode})`, async () => {
          // Prepare
          const rs = c.recording();
          setInput(rs, c.urn, "serverSideEncryption", undefined);
          // Act
          const violations = await evaluate(rs, { mode });
          // Assess
          expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: /must enable server-side encryption/ });
        });
      }
    }
  });
});
