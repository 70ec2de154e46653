import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { parseWindowPayload } from "../../../functions/ingest/payload";
import { MAX_REASON_CHARS, quarantine } from "../../../functions/shared/quarantine";
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
});
