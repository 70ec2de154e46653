/** policy/rules/sqs-mapping-reports-batch-item-failures.ts: SQS mappings report partial batch failures. */
import { U, ingestRecording } from "../helpers/ingest";
import { T, mapping, queueArn, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "sqs-mapping-reports-batch-item-failures";

describe(POLICY, () => {
  it("passes the good ingest recording (both mappings report batch item failures)", async () => {
    // Prepare
    const rs = ingestRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a mapping of an out-of-stack queue that reports batch item failures", async () => {
      // Prepare
      const rs = [mapping("reader", { eventSourceArn: queueArn("elsewhere"), functionResponseTypes: ["ReportBatchItemFailures"] })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a mapping of an out-of-stack queue (a literal SQS ARN) without them", async () => {
      // Prepare
      const rs = [mapping("reader", { eventSourceArn: queueArn("elsewhere") })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.mapping, "reader"),
        message: /'reader' reads SQS without functionResponseTypes/,
      });
    });
  });

  it("fails the ingest window mapping without ReportBatchItemFailures", async () => {
    // Prepare
    const rs = ingestRecording();
    setInput(rs, U.windowMapping, "functionResponseTypes", undefined);
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectViolation(violations, { policy: POLICY, level: "mandatory", urn: U.windowMapping });
  });
});
