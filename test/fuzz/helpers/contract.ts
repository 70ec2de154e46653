/**
 * What every SQS consumer must do with any batch, checked against what the mocks received:
 * the partial batch response names only records of the batch, and each malformed record was
 * moved to the quarantine queue with its reason in a message SQS would accept.
 */
import { SendMessageCommand, type SendMessageCommandInput, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse } from "aws-lambda";
import type { AwsClientStub } from "aws-sdk-client-mock";
import { expect } from "chai";
import { type FuzzRecord, SQS_MAX_BYTES } from "./arbitraries";

/** The reason attribute the shared quarantine helper sets (functions/shared/quarantine.ts). */
export const REASON_ATTRIBUTE = "quarantine-reason";
export const SOURCE_ID_ATTRIBUTE = "source-message-id";

/**
 * The characters SQS accepts in a body or a string attribute (the XML 1.0 set): tab, LF, CR,
 * U+0020–U+D7FF, U+E000–U+FFFD and U+10000–U+10FFFF. A lone surrogate is none of these.
 */
export function sqsRefusedCharacter(text: string): string | undefined {
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    const ok = cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
    if (!ok) return `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
  }
  return undefined;
}

/** What SQS counts toward a message's size: the body plus each attribute's name, type and value. */
export function sendMessageBytes(input: SendMessageCommandInput): number {
  let bytes = Buffer.byteLength(input.MessageBody ?? "", "utf8");
  for (const [name, v] of Object.entries(input.MessageAttributes ?? {})) {
    bytes += Buffer.byteLength(name, "utf8") + Buffer.byteLength(v.DataType ?? "", "utf8");
    bytes += v.StringValue !== undefined ? Buffer.byteLength(v.StringValue, "utf8") : (v.BinaryValue?.byteLength ?? 0);
  }
  return bytes;
}

/** Why SQS would refuse this SendMessage, or undefined when it would take it. */
export function sqsRefusal(input: SendMessageCommandInput): string | undefined {
  if (sendMessageBytes(input) > SQS_MAX_BYTES) return `MessageTooLong: ${sendMessageBytes(input)} B`;
  for (const [name, v] of Object.entries(input.MessageAttributes ?? {})) {
    const bad = v.StringValue === undefined ? undefined : sqsRefusedCharacter(v.StringValue);
    if (bad) return `InvalidParameterValue: attribute ${name} holds ${bad}`;
  }
  return undefined;
}

/** An error shaped like the SDK's: the handlers only look at `name`. */
export function awsError(name: string, message = name): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** The injected failure every fault uses, so an assertion can tell it from a real one. */
export const INJECTED = "InjectedFault";
export const injected = (what: string): Error => awsError(INJECTED, `injected: ${what}`);

/**
 * The response is a partial batch response (`{ batchItemFailures: [{ itemIdentifier }] }`) and
 * every identifier is the message id of a record in the batch. Returns the failed ids.
 */
export function assertPartialBatchResponse(response: unknown, records: readonly FuzzRecord[]): Set<string> {
  expect(response, "the handler returns a partial batch response").to.be.an("object");
  const failures = (response as SQSBatchResponse).batchItemFailures;
  expect(failures, "batchItemFailures is an array").to.be.an("array");
  const ids = new Set(records.map((r) => r.record.messageId));
  for (const f of failures) {
    expect(f).to.have.all.keys("itemIdentifier");
    expect(ids.has(f.itemIdentifier), `itemIdentifier ${f.itemIdentifier} is a record of the batch`).to.equal(true);
  }
  return new Set(failures.map((f) => f.itemIdentifier));
}

export interface Quarantined {
  messageId: string;
  reason: string;
  body: string;
  refusal: string | undefined;
}

/** Every SendMessage to `queueUrl`, read as a quarantine: the source id, the reason and whether SQS would take it. */
export function quarantinedOn(sqsMock: AwsClientStub<SQSClient>, queueUrl: string): Quarantined[] {
  return sqsMock
    .commandCalls(SendMessageCommand)
    .map((c) => c.args[0].input as SendMessageCommandInput)
    .filter((input) => input.QueueUrl === queueUrl)
    .map((input) => ({
      messageId: input.MessageAttributes?.[SOURCE_ID_ATTRIBUTE]?.StringValue ?? "",
      reason: input.MessageAttributes?.[REASON_ATTRIBUTE]?.StringValue ?? "",
      body: input.MessageBody ?? "",
      refusal: sqsRefusal(input),
    }));
}

/**
 * A SendMessage stub for the quarantine queue: it refuses what SQS would refuse (with the error
 * SQS gives) and fails, as injected, the message ids in `failIds`.
 */
export function quarantineSendMessage(failIds: () => ReadonlySet<string>) {
  return (input: SendMessageCommandInput) => {
    const refusal = sqsRefusal(input);
    if (refusal) throw awsError(refusal.split(":")[0] ?? "InvalidParameterValue", refusal);
    const id = input.MessageAttributes?.[SOURCE_ID_ATTRIBUTE]?.StringValue ?? "";
    if (failIds().has(id)) throw injected(`SendMessage of ${id}`);
    return { MessageId: `q-${id}` };
  };
}

/**
 * Every malformed record was quarantined with a non-empty reason, its body unchanged, in a
 * message SQS would accept; it is acknowledged unless its quarantine failed by injection.
 */
export function assertMalformedQuarantined(
  records: readonly FuzzRecord[],
  quarantined: readonly Quarantined[],
  failed: ReadonlySet<string>,
  quarantineFails: ReadonlySet<string>,
): void {
  for (const q of quarantined)
    expect(q.refusal, `quarantine of ${q.messageId} is a message SQS accepts (reason ${JSON.stringify(q.reason.slice(0, 120))})`).to.equal(undefined);
  for (const { record, how } of records.filter((r) => r.verdict === "malformed")) {
    const mine = quarantined.filter((q) => q.messageId === record.messageId);
    expect(mine.length, `malformed record (${how}) ${JSON.stringify(record.body.slice(0, 80))} is quarantined`).to.be.greaterThan(0);
    for (const q of mine) {
      expect(q.reason, "quarantine carries a reason").to.not.equal("");
      expect(q.body === record.body, "quarantine keeps the body as it was").to.equal(true);
    }
    if (!quarantineFails.has(record.messageId)) expect(failed.has(record.messageId), `malformed record (${how}) is acknowledged, not retried`).to.equal(false);
  }
}

/** No well-formed record was quarantined. */
export function assertValidNotQuarantined(records: readonly FuzzRecord[], quarantined: readonly Quarantined[]): void {
  const ids = new Set(quarantined.map((q) => q.messageId));
  for (const { record } of records.filter((r) => r.verdict === "valid")) {
    const reason = quarantined.find((q) => q.messageId === record.messageId)?.reason;
    expect(ids.has(record.messageId), `well-formed record ${JSON.stringify(record.body.slice(0, 120))} is not quarantined (reason: ${reason})`).to.equal(false);
  }
}
