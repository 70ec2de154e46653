import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { parseWindowPayload } from "../../../functions/ingest/payload";
import { MAX_REASON_CHARS, quarantine, reasonAttribute } from "../../../functions/shared/quarantine";
import { sqsRecord } from "../helpers/sqs-events";
import { RecordingLogger, RecordingMetrics } from "../helpers/telemetry";

const QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-quarantine";

describe("shared/quarantine", () => {
  it("sends the original body with reason, source message id and source queue ARN", async () => {
    const sqs = new SQSClient({ region: "us-east-1" });
    const sqsMock = mockClient(sqs);
    sqsMock.on(SendMessageCommand).resolves({ MessageId: "q1" });
    const logger = new RecordingLogger();
    const metrics = new RecordingMetrics();
    const record = sqsRecord("raw body", { eventSourceARN: "arn:aws:sqs:us-east-1:123456789012:ingest-dlq" });

    await quarantine(sqs, QUEUE, record, "body is not JSON", { logger, metrics });

    expect(sqsMock.commandCalls(SendMessageCommand).map((c) => c.args[0].input)).to.deep.equal([
      {
        QueueUrl: QUEUE,
        MessageBody: "raw body",
        MessageAttributes: {
          "quarantine-reason": { DataType: "String", StringValue: "body is not JSON" },
          "source-message-id": { DataType: "String", StringValue: record.messageId },
          "source-queue-arn": { DataType: "String", StringValue: "arn:aws:sqs:us-east-1:123456789012:ingest-dlq" },
        },
      },
    ]);
    expect(logger.withStep("message_quarantined")[0]?.fields).to.deep.equal({
      step: "message_quarantined",
      message_id: record.messageId,
      reason: "body is not JSON",
    });
    expect(metrics.count("MessagesQuarantined")).to.equal(1);
  });

  it("rejects, and logs no quarantine, when SendMessage fails", async () => {
    const sqs = new SQSClient({ region: "us-east-1" });
    mockClient(sqs).on(SendMessageCommand).rejects(new Error("KMS throttled"));
    const logger = new RecordingLogger();
    const metrics = new RecordingMetrics();

    const error = await quarantine(sqs, QUEUE, sqsRecord("x"), "reason", { logger, metrics }).then(
      () => null,
      (e: unknown) => e,
    );

    expect(error).to.be.instanceOf(Error).with.property("message", "KMS throttled");
    expect(logger.entries).to.deep.equal([]);
    expect(metrics.count("MessagesQuarantined")).to.equal(0);
  });

  // Found by test/fuzz (issue 16): JSON.parse's message quotes the body and cuts "😀" in half, so
  // the reason held a lone surrogate, which SQS refuses in an attribute; the record was then retried.
  it("sends a reason SQS accepts when the parser's message cuts an emoji in half", async () => {
    // Prepare
    const sqs = new SQSClient({ region: "us-east-1" });
    const sqsMock = mockClient(sqs);
    sqsMock.on(SendMessageCommand).resolves({ MessageId: "q1" });
    const parsed = parseWindowPayload("😀");
    if (parsed.ok) throw new Error("a lone emoji is not a window");
    expect(parsed.reason, "the parser's reason holds a lone high surrogate").to.match(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    // Act
    await quarantine(sqs, QUEUE, sqsRecord("😀"), parsed.reason, { logger: new RecordingLogger(), metrics: new RecordingMetrics() });
    // Assess
    const sent = sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input;
    const reason = sent?.MessageAttributes?.["quarantine-reason"]?.StringValue ?? "";
    expect(reason).to.not.match(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    expect(reason).to.include("body is not JSON").and.include("\uFFFD");
    expect(sent?.MessageBody, "the body itself is kept as it was").to.equal("😀");
  });

  it("cuts a reason that quotes a huge value, so the copy stays within SQS's size limit", async () => {
    // Prepare
    const sqs = new SQSClient({ region: "us-east-1" });
    const sqsMock = mockClient(sqs);
    sqsMock.on(SendMessageCommand).resolves({ MessageId: "q1" });
    const reason = `unknown task_type ${JSON.stringify("😀".repeat(100_000))}`;
    // Act
    await quarantine(sqs, QUEUE, sqsRecord("{}"), reason, { logger: new RecordingLogger(), metrics: new RecordingMetrics() });
    // Assess
    const sent = sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageAttributes?.["quarantine-reason"]?.StringValue ?? "";
    expect(sent.length).to.be.at.most(MAX_REASON_CHARS);
    expect(sent.startsWith("unknown task_type")).to.equal(true);
    expect(sent, "not cut inside a surrogate pair").to.not.match(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  describe("reasonAttribute: the reason as an attribute SQS accepts, at most MAX_REASON_CHARS long", () => {
    const cases: Array<{ what: string; reason: string; expected: string }> = [
      { what: "keeps a reason of exactly the limit whole", reason: "a".repeat(MAX_REASON_CHARS), expected: "a".repeat(MAX_REASON_CHARS) },
      { what: "cuts a reason one past the limit, marking the cut", reason: "a".repeat(MAX_REASON_CHARS + 1), expected: `${"a".repeat(MAX_REASON_CHARS - 1)}…` },
      // 600 emoji: the cut after 1023 UTF-16 units ends on the high half of the 512th emoji, which is dropped.
      { what: "drops the high half of an emoji the cut would split", reason: "😀".repeat(600), expected: `${"😀".repeat(511)}…` },
      // One character ahead, the cut ends after the low half of the 511th emoji: nothing to drop.
      { what: "keeps a whole emoji that ends right at the cut", reason: `x${"😀".repeat(600)}`, expected: `x${"😀".repeat(511)}…` },
      { what: "replaces characters SQS refuses", reason: "bad\u0000byte\uFFFE", expected: "bad\uFFFDbyte\uFFFD" },
    ];
    for (const c of cases) {
      it(c.what, () => {
        expect(reasonAttribute(c.reason)).to.equal(c.expected);
      });
    }
  });

  it('names the source queue "unknown" when the record carries no source ARN', async () => {
    // Prepare
    const sqs = new SQSClient({ region: "us-east-1" });
    const sqsMock = mockClient(sqs);
    sqsMock.on(SendMessageCommand).resolves({ MessageId: "q1" });
    // Act
    await quarantine(sqs, QUEUE, sqsRecord("x", { eventSourceARN: "" }), "reason", { logger: new RecordingLogger(), metrics: new RecordingMetrics() });
    // Assess
    const attributes = sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageAttributes;
    expect(attributes?.["source-queue-arn"]).to.deep.equal({ DataType: "String", StringValue: "unknown" });
  });
});
