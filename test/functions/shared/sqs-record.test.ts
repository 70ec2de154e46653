import type { Message } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { queueArnFromUrl, receiveCount, toSqsRecord } from "../../../functions/shared/sqs-record";

const QUEUE_ARN = "arn:aws:sqs:eu-west-1:123456789012:worker";

describe("a polled message in Lambda's SQSRecord shape (functions/shared/sqs-record.ts)", () => {
  it("carries every fact of a polled message over under Lambda's names", () => {
    // Prepare
    const message: Message = {
      MessageId: "m-1",
      ReceiptHandle: "rh-1",
      Body: '{"job_id":"j"}',
      MD5OfBody: "d41d8cd98f00b204e9800998ecf8427e",
      Attributes: { ApproximateReceiveCount: "3", SentTimestamp: "1700000000000", SenderId: "AIDA123", ApproximateFirstReceiveTimestamp: "1700000000500" },
    };

    // Act
    const record = toSqsRecord(message, QUEUE_ARN);

    // Assess
    expect(record).to.deep.equal({
      messageId: "m-1",
      receiptHandle: "rh-1",
      body: '{"job_id":"j"}',
      attributes: { ApproximateReceiveCount: "3", SentTimestamp: "1700000000000", SenderId: "AIDA123", ApproximateFirstReceiveTimestamp: "1700000000500" },
      messageAttributes: {},
      md5OfBody: "d41d8cd98f00b204e9800998ecf8427e",
      eventSource: "aws:sqs",
      eventSourceARN: QUEUE_ARN,
      awsRegion: "eu-west-1",
    });
  });

  it("fills what a message lacks with Lambda's neutral values", () => {
    expect(toSqsRecord({}, QUEUE_ARN)).to.deep.equal({
      messageId: "",
      receiptHandle: "",
      body: "",
      attributes: { ApproximateReceiveCount: "1", SentTimestamp: "", SenderId: "", ApproximateFirstReceiveTimestamp: "" },
      messageAttributes: {},
      md5OfBody: "",
      eventSource: "aws:sqs",
      eventSourceARN: QUEUE_ARN,
      awsRegion: "eu-west-1",
    });
  });

  it("takes us-east-1 for a queue ARN without a region", () => {
    expect(toSqsRecord({}, "not-an-arn").awsRegion).to.equal("us-east-1");
  });

  it("spells message attributes as Lambda does: camelCase, binary as base64, list fields present", () => {
    const record = toSqsRecord(
      { MessageAttributes: { kind: { DataType: "String", StringValue: "a" }, blob: { DataType: "Binary", BinaryValue: Buffer.from("hi") } } },
      QUEUE_ARN,
    );
    expect(record.messageAttributes).to.deep.equal({
      kind: { stringValue: "a", stringListValues: [], binaryListValues: [], dataType: "String" },
      blob: { binaryValue: Buffer.from("hi").toString("base64"), stringListValues: [], binaryListValues: [], dataType: "Binary" },
    });
  });

  const urls: Array<[string, string, string]> = [
    ["an AWS queue URL", "https://sqs.us-east-1.amazonaws.com/123456789012/work", "arn:aws:sqs:us-east-1:123456789012:work"],
    [
      "a regional endpoint with a dashed region",
      "https://sqs.ap-southeast-2.amazonaws.com/210987654321/jobs-dlq",
      "arn:aws:sqs:ap-southeast-2:210987654321:jobs-dlq",
    ],
    ["a local endpoint (no region in the host)", "http://localhost:4566/000000000000/work", "arn:aws:sqs:unknown:000000000000:work"],
    ["a URL without a queue name", "https://sqs.us-east-1.amazonaws.com/123456789012", "arn:aws:sqs:us-east-1:123456789012:unknown"],
  ];
  for (const [name, url, arn] of urls) {
    it(`derives the queue ARN from ${name}`, () => {
      expect(queueArnFromUrl(url)).to.equal(arn);
    });
  }

  const counts: Array<[string, Message, number]> = [
    ["the receive count SQS reported", { Attributes: { ApproximateReceiveCount: "4" } }, 4],
    ["0 when the attribute is missing", { Attributes: {} }, 0],
    ["0 when the message has no attributes", {}, 0],
    ["0 when the attribute is not a number", { Attributes: { ApproximateReceiveCount: "many" } }, 0],
  ];
  for (const [name, message, expected] of counts) {
    it(`reads ${name}`, () => {
      expect(receiveCount(message)).to.equal(expected);
    });
  }
});
