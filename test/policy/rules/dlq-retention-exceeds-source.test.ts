/** policy/rules/dlq-retention-exceeds-source.ts: a DLQ outlives its source's messages; maxReceiveCount is never 1. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { platformRecording } from "../helpers/platform";
import { T, queue, queueArn, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolationOf, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "dlq-retention-exceeds-source";

const dlqUrn = urnOf(T.queue, "orders-dlq");
/** A source queue (4 days) redriving to `orders-dlq` with the given retention. */
const redriven = (dlqRetention: number) => [
  queue("orders-dlq", { messageRetentionSeconds: dlqRetention, tags: { "encache:queue-role": "dlq" } }),
  queue(
    "orders",
    { messageRetentionSeconds: 345600, redrivePolicy: JSON.stringify({ deadLetterTargetArn: queueArn("orders-dlq"), maxReceiveCount: 3 }) },
    { deps: { redrivePolicy: [dlqUrn] } },
  ),
];

describe(POLICY, () => {
  it("passes the good ingest recording (14-day DLQ behind a 4-day source, maxReceiveCount 3)", async () => {
    // Prepare
    const rs = ingestRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a DLQ that keeps messages longer than its source", async () => {
      // Prepare
      const rs = redriven(1_209_600);
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolationOf(violations, POLICY);
    });

    it("fails a DLQ that keeps messages exactly as long as its source", async () => {
      // Prepare
      const rs = redriven(345600);
      // Act
      const violations = await evaluate(rs);
      // Assess: the DLQ also lacks a depth alarm (advisory), which this case does not build.
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: dlqUrn,
        message: /DLQ 'orders-dlq' keeps messages 345600s, not longer than its source 'orders'/,
        also: [["dlq-has-depth-alarm", dlqUrn]],
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; urn: string; message?: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      { title: "a DLQ retention equal to the source's", urn: U.dlq, mutate: (rs) => setInput(rs, U.dlq, "messageRetentionSeconds", 345600) },
      {
        title: "a DLQ retention left unset (AWS default 4 days) equals the source's",
        urn: U.dlq,
        mutate: (rs) => setInput(rs, U.dlq, "messageRetentionSeconds", undefined),
      },
      {
        title: "maxReceiveCount 1",
        urn: U.ingest,
        message: /maxReceiveCount 1/,
        mutate: (rs) => setInput(rs, U.ingest, "redrivePolicy", JSON.stringify({ deadLetterTargetArn: queueArn("ingest-dlq"), maxReceiveCount: 1 })),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = ingestRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message });
      });
    }
  });

  describe("maxReceiveCount on a first preview, when the redrive JSON is unknown", () => {
    // The redrive JSON names the DLQ's ARN, so the engine model makes it unknown; the tag stays literal.
    const firstPreview = (rs: RecordedResource[], count: string) => {
      setInput(rs, U.ingest, "tags", { "encache:queue-role": "source", "encache:max-receive-count": count });
    };

    it("reads the literal encache:max-receive-count tag and catches 1", async () => {
      // Prepare
      const rs = platformRecording();
      firstPreview(rs, "1");
      // Act
      const violations = await evaluate(rs, { mode: "first-preview" });
      // Assess
      expectViolation(violations, { policy: POLICY, level: "mandatory", urn: U.ingest, message: /maxReceiveCount 1/ });
    });

    it("passes 3", async () => {
      // Prepare
      const rs = platformRecording();
      firstPreview(rs, "3");
      // Act
      const violations = await evaluate(rs, { mode: "first-preview" });
      // Assess
      expectNoViolationOf(violations, POLICY);
    });
  });
});
