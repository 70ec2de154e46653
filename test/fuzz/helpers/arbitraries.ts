/**
 * Generators shared by every part's fuzz properties: odd SQS bodies, odd record attributes, and
 * batches that mix well-formed and malformed records (with duplicated deliveries). Each body
 * carries the verdict its part's documented schema gives it (`valid` or `malformed`), decided
 * here from how it was built, never by calling the code under test.
 */
import type { SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from "aws-lambda";
import fc from "fast-check";

export type Verdict = "valid" | "malformed";

/** A generated body, what the schema says of it, and how it was made (shown in counterexamples). */
export interface BodyCase {
  body: string;
  verdict: Verdict;
  how: string;
}

/** SQS's classic size limit, body and attributes together. */
export const SQS_MAX_BYTES = 256 * 1024;
/**
 * Head-room left under SQS_MAX_BYTES for huge bodies: a quarantined copy carries three more
 * attributes, so a body right at the limit could not be moved aside (reported separately).
 */
export const QUARANTINE_HEADROOM_BYTES = 4096;

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const astral = fc.constantFrom("😀", "𝄞", "🂡", "👩‍👩‍👧");
/** Any UTF-16 text: full Unicode, lone surrogates, controls, emoji and zero-width characters. */
export const anyText = (maxLength = 40): fc.Arbitrary<string> =>
  fc
    .array(
      fc.oneof(fc.string({ unit: "binary", maxLength: 4 }), loneSurrogate, astral, fc.constantFrom("\u0000", "\uFEFF", "\u200B", "\u202E", "\\", '"', "\n")),
      { maxLength },
    )
    .map((parts) => parts.join(""));

/** Bodies that are malformed for every part: none is a JSON object. */
const notAnObject: fc.Arbitrary<BodyCase> = fc.oneof(
  fc
    .constantFrom(
      "",
      " ",
      "\n",
      "\t\r\n",
      "null",
      "true",
      "false",
      "0",
      "-0",
      "1e308",
      "-1e308",
      "NaN",
      "Infinity",
      "undefined",
      "[]",
      "[{}]",
      '""',
      '"{}"',
      "{",
      "}",
      "{]",
      "{'a': 1}",
      "{a: 1}",
      "[1,,2]",
    )
    .map((body) => ({ body, verdict: "malformed" as const, how: "constant" })),
  anyText(60)
    .filter((s) => !s.trimStart().startsWith("{"))
    .map((body) => ({ body, verdict: "malformed" as const, how: "text" })),
  fc
    .jsonValue({ maxDepth: 3 })
    .filter((v) => typeof v !== "object" || v === null || Array.isArray(v))
    .map((v) => ({ body: JSON.stringify(v), verdict: "malformed" as const, how: "json scalar or array" })),
  fc
    .integer({ min: 1, max: 2000 })
    .map((depth) => ({ body: "[".repeat(depth) + "]".repeat(depth), verdict: "malformed" as const, how: `nested arrays ×${depth}` })),
  fc.integer({ min: 1, max: 64 }).map((n) => ({ body: `"${"\\ud800".repeat(n)}"`, verdict: "malformed" as const, how: "escaped lone surrogates" })),
);

/** JSON objects whose keys are junk: no part's required fields can be among them. */
const junkObject: fc.Arbitrary<BodyCase> = fc
  .dictionary(
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 8 }).map((k) => `~${k}`),
    fc.jsonValue({ maxDepth: 3 }),
    { maxKeys: 6 },
  )
  .map((o) => ({ body: JSON.stringify(o), verdict: "malformed" as const, how: "object of junk keys" }));

/** Deep nesting inside an object: JSON.parse and the schema both see it. */
const deepObject: fc.Arbitrary<BodyCase> = fc.integer({ min: 1, max: 3000 }).map((depth) => ({
  body: `{"~deep":${'{"a":'.repeat(depth)}1${"}".repeat(depth)}}`,
  verdict: "malformed" as const,
  how: `nested objects ×${depth}`,
}));

/** Bytes up to the SQS limit (less the quarantine head-room), in one of a few encodings. */
const huge: fc.Arbitrary<BodyCase> = fc
  .tuple(fc.integer({ min: 1, max: SQS_MAX_BYTES - QUARANTINE_HEADROOM_BYTES }), fc.constantFrom("ascii", "emoji", "json-array", "json-string"))
  .map(([bytes, kind]) => {
    const body =
      kind === "ascii"
        ? "x".repeat(bytes)
        : kind === "emoji"
          ? "😀".repeat(Math.floor(bytes / 4))
          : kind === "json-array"
            ? `[${"1,".repeat(Math.max(0, Math.floor(bytes / 2) - 1))}1]`
            : `"${"y".repeat(Math.max(0, bytes - 2))}"`;
    return { body, verdict: "malformed" as const, how: `huge ${kind} ${Buffer.byteLength(body)} B` };
  });

/** `text` cut to at most `bytes` of UTF-8 (a character cut in half becomes U+FFFD, which SQS accepts). */
export function capBytes(text: string, bytes: number): string {
  const buffer = Buffer.from(text, "utf8");
  return buffer.byteLength <= bytes ? text : buffer.subarray(0, bytes - 3).toString("utf8");
}

/**
 * Malformed bodies that need the part's well-formed body to build: a BOM in front, base64 of
 * it, it cut short, quoted as a JSON string, or wrapped in an array. JSON.parse refuses a BOM.
 */
export function disguised(valid: fc.Arbitrary<string>): fc.Arbitrary<BodyCase> {
  return fc.tuple(valid, fc.constantFrom("bom", "base64", "truncated", "quoted", "wrapped", "trailing-junk"), fc.nat()).map(([body, how, n]) => {
    const out =
      how === "bom"
        ? `\uFEFF${body}`
        : how === "base64"
          ? Buffer.from(body, "utf8").toString("base64")
          : how === "truncated"
            ? body.slice(0, n % Math.max(1, body.length - 1))
            : how === "quoted"
              ? JSON.stringify(body)
              : how === "wrapped"
                ? `[${body}]`
                : `${body}}`;
    return { body: capBytes(out, SQS_MAX_BYTES - QUARANTINE_HEADROOM_BYTES), verdict: "malformed" as const, how: `disguised ${how}` };
  });
}

/** Every part's malformed bodies, plus its own disguised well-formed ones. */
export function oddBody(valid: fc.Arbitrary<string>): fc.Arbitrary<BodyCase> {
  return fc.oneof(
    { arbitrary: notAnObject, weight: 4 },
    { arbitrary: junkObject, weight: 2 },
    { arbitrary: deepObject, weight: 1 },
    { arbitrary: huge, weight: 1 },
    { arbitrary: disguised(valid), weight: 2 },
  );
}

/** A field that is kept, replaced by a raw JSON token (spliced into the text) or removed. */
export type FieldEdit = { kind: "raw"; token: string } | { kind: "drop" };

/**
 * `object` serialised with `field` set to a raw JSON token or removed. The token is spliced
 * into the text, so tokens JSON.stringify can't write (`-0`, `1.0`, `1e2`, `NaN`) reach the parser.
 */
export function withField(object: Record<string, unknown>, field: string, edit: FieldEdit): string {
  const copy: Record<string, unknown> = { ...object };
  if (edit.kind === "drop") {
    delete copy[field];
    return JSON.stringify(copy);
  }
  const marker = "\u0000raw\u0000";
  copy[field] = marker;
  return JSON.stringify(copy).replace(JSON.stringify(marker), edit.token);
}

/** Raw tokens a non-negative integer field accepts (JSON numbers equal to a safe integer ≥ 0). */
export const VALID_NON_NEGATIVE_INT_TOKENS = ["0", "-0", "1.0", "1e2", "100E-2", "0.0e5", "9007199254740991"] as const;
/** Raw tokens a positive integer field accepts. */
export const VALID_POSITIVE_INT_TOKENS = ["1", "1.0", "1e2", "4", "9007199254740991"] as const;
/** Raw tokens no integer field accepts: fractions, out of range, other types, and text that is not JSON. */
export const INVALID_INT_TOKENS = [
  "1.5",
  "-1",
  "1e308",
  "1e400",
  "-1e400",
  "9007199254740992",
  "5e-324",
  "-0.5",
  '"1"',
  '"NaN"',
  '"1e3"',
  "null",
  "true",
  "[]",
  "{}",
  "[1]",
  "NaN",
  "Infinity",
  "-Infinity",
  "01",
  "+1",
  "0x10",
  ".5",
  "1.",
  "--1",
] as const;
/** Raw tokens no string field accepts. */
export const INVALID_STRING_TOKENS = ["1", "-0", "1e308", "null", "true", "[]", "{}", '[""]', "NaN", "'quoted'", "undefined"] as const;

/** A raw-token edit from `tokens`. */
export const rawFrom = (tokens: readonly string[]): fc.Arbitrary<FieldEdit> => fc.constantFrom(...tokens).map((token) => ({ kind: "raw" as const, token }));

/** How a record's SQS attributes look: as Lambda sends them, or missing and garbled ones. */
const receiveCount = fc.oneof(fc.constantFrom("1", "2", "3", "1000", "0"), fc.constantFrom("", "abc", "NaN", "-1", "1e308", "Infinity", "1.5", " 2 ", "0x3"));
const sentTimestamp = fc.oneof(
  // Around the handlers' fixed clocks (2023-11-14 and 2024/2025/2026), far past, far future.
  fc.integer({ min: 0, max: 2_000_000_000_000 }).map(String),
  fc.constantFrom("", "abc", "NaN", "-1", "1e308", "Infinity", "1700000000000.5", "-0"),
);

/**
 * Lambda's type says these attributes are always there; the fuzz drops some on purpose, to
 * prove no handler relies on it, hence the cast through unknown.
 */
export const recordAttributes: fc.Arbitrary<SQSRecordAttributes> = fc
  .record(
    {
      ApproximateReceiveCount: receiveCount,
      SentTimestamp: sentTimestamp,
      SenderId: fc.constantFrom("AIDAEXAMPLE", ""),
      ApproximateFirstReceiveTimestamp: sentTimestamp,
    },
    { requiredKeys: [] },
  )
  .map((a) => a as unknown as SQSRecordAttributes);

/** Message attributes as Lambda spells them: strings, numbers, binary (base64) and junk. */
export const messageAttributes: fc.Arbitrary<SQSMessageAttributes> = fc.dictionary(
  fc.constantFrom("trace", "retraining-origin-message-id", "retraining-deferrals", "Content-Type", "x.y", "ünïcode"),
  fc.oneof(
    anyText(20).map((text) => ({ dataType: "String", stringValue: asDeliveredBySqs(text), stringListValues: [], binaryListValues: [] })),
    fc
      .constantFrom("1", "-1", "NaN", "1e308", "0.5", "", "abc")
      .map((stringValue) => ({ dataType: "Number", stringValue, stringListValues: [], binaryListValues: [] })),
    fc
      .uint8Array({ maxLength: 16 })
      .map((b) => ({ dataType: "Binary", binaryValue: Buffer.from(b).toString("base64"), stringListValues: [], binaryListValues: [] })),
  ),
  { maxKeys: 3 },
);

/** One generated record before it gets its id: its body case plus attribute oddities. */
export interface RecordCase extends BodyCase {
  attributes?: SQSRecordAttributes;
  messageAttributes?: SQSMessageAttributes;
  eventSourceARN?: string;
}

/** A body case with Lambda's usual attributes, or odd ones about a third of the time. */
export function recordCase(body: fc.Arbitrary<BodyCase>): fc.Arbitrary<RecordCase> {
  return fc
    .record(
      {
        c: body,
        attributes: fc.option(recordAttributes, { freq: 3, nil: undefined }),
        messageAttributes: fc.option(messageAttributes, { freq: 3, nil: undefined }),
        arn: fc.constantFrom(undefined, "", "arn:aws:sqs:us-east-1:123456789012:q"),
      },
      { requiredKeys: ["c"] },
    )
    .map(({ c, attributes, messageAttributes: m, arn }) => ({
      ...c,
      ...(attributes ? { attributes } : {}),
      ...(m ? { messageAttributes: m } : {}),
      ...(arn !== undefined ? { eventSourceARN: arn } : {}),
    }));
}

/** A record in the batch, and the verdict of its body. */
export interface FuzzRecord {
  record: SQSRecord;
  verdict: Verdict;
  how: string;
}

export interface BatchShape {
  minLength?: number;
  maxLength?: number;
}

/**
 * A batch of records. Message ids are UUIDs unique to their record, except that some records
 * are delivered twice in the same batch (same id and body, another receipt handle), as SQS's
 * at-least-once delivery can do.
 */
export function batchOf(
  record: fc.Arbitrary<RecordCase>,
  shape: BatchShape = {},
  tag?: (body: string, messageId: string) => string,
): fc.Arbitrary<FuzzRecord[]> {
  const { minLength = 1, maxLength = 10 } = shape;
  return fc.tuple(fc.array(record, { minLength, maxLength }), fc.uuid({ version: 4 }), fc.array(fc.nat(), { maxLength: 3 })).map(([cases, base, dupes]) => {
    const records = cases.map((c, i) => {
      const messageId = `${base.slice(0, 28)}${i.toString(16).padStart(8, "0")}`;
      return toFuzzRecord(tag && c.verdict === "valid" ? { ...c, body: tag(c.body, messageId) } : c, messageId, `rh-${i}`);
    });
    // Duplicates replace later records so the batch stays within its size.
    for (const [k, d] of dupes.entries()) {
      if (records.length < 2) break;
      const source = records[d % records.length]!;
      const at = (d + k + 1) % records.length;
      if (records[at] === source) continue;
      records[at] = { ...source, record: { ...source.record, receiptHandle: `rh-dup-${k}` } };
    }
    return records;
  });
}

/**
 * The body as SQS delivers it: SQS replaces every character outside the XML set it allows
 * (controls, lone surrogates, U+FFFE/U+FFFF) with U+FFFD when the message is sent, so a Lambda
 * never receives them raw. Escaped in JSON (`"\\ud800"`) they still arrive, and are generated so.
 */
export function asDeliveredBySqs(body: string): string {
  return body.replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "\uFFFD");
}

function toFuzzRecord(c: RecordCase, messageId: string, receiptHandle: string): FuzzRecord {
  const record: SQSRecord = {
    messageId,
    receiptHandle,
    body: asDeliveredBySqs(c.body),
    attributes: c.attributes ?? {
      ApproximateReceiveCount: "1",
      SentTimestamp: "1700000000000",
      SenderId: "AIDAEXAMPLE",
      ApproximateFirstReceiveTimestamp: "1700000000001",
    },
    messageAttributes: c.messageAttributes ?? {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: c.eventSourceARN ?? "arn:aws:sqs:us-east-1:123456789012:fuzz",
    awsRegion: "us-east-1",
  };
  return { record, verdict: c.verdict, how: c.how };
}

/** A valid case (weight 3) or an odd one (weight 2), plus the part's own near-miss malformed ones (weight 2). */
export function partBody(valid: fc.Arbitrary<string>, nearMiss: fc.Arbitrary<BodyCase>): fc.Arbitrary<BodyCase> {
  return fc.oneof(
    { arbitrary: valid.map((body) => ({ body, verdict: "valid" as const, how: "well-formed" })), weight: 3 },
    { arbitrary: nearMiss, weight: 2 },
    { arbitrary: oddBody(valid), weight: 2 },
  );
}

/**
 * Puts the record's message id into a well-formed JSON object body as the extra key `~mid`, so
 * a side effect that carries the payload (a POST) can be traced back to its record.
 */
export const tagWithMessageId = (body: string, messageId: string): string => body.replace(/^\{/, `{"~mid":${JSON.stringify(messageId)},`);

/** A padding key whose value makes a well-formed body large, up to the SQS limit less head-room. */
export const padding: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { arbitrary: fc.constant({}), weight: 9 },
  { arbitrary: fc.integer({ min: 1, max: SQS_MAX_BYTES - QUARANTINE_HEADROOM_BYTES - 8192 }).map((n) => ({ "~pad": "p".repeat(n) })), weight: 1 },
);
