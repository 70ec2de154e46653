import { expect } from "chai";
import { carriedAttributes, chunkEntries, DEFERRALS_ATTRIBUTE, entryBytes, lineageOf, MAX_BATCH_BYTES, ORIGIN_ATTRIBUTE } from "../../../functions/retraining/defer";
import { sqsRecord } from "../helpers/sqs-events";

describe("retraining/launcher units", () => {
  describe("deferral lineage and batches", () => {
    const attr = (stringValue: string, dataType = "String") => ({ dataType, stringValue, stringListValues: [], binaryListValues: [] });
    const cases: Array<[string, Record<string, ReturnType<typeof attr>>, { origin: "own" | string; deferrals: number }]> = [
      ["a first delivery is its own origin", {}, { origin: "own", deferrals: 0 }],
      ["a copy keeps its origin and count", { [ORIGIN_ATTRIBUTE]: attr("0b6f-uuid"), [DEFERRALS_ATTRIBUTE]: attr("4", "Number") }, { origin: "0b6f-uuid", deferrals: 4 }],
      ["an origin with characters no message id has is ignored", { [ORIGIN_ATTRIBUTE]: attr("a b") }, { origin: "own", deferrals: 0 }],
      ["a count that is no whole number reads as 0", { [DEFERRALS_ATTRIBUTE]: attr("-2", "Number") }, { origin: "own", deferrals: 0 }],
    ];
    for (const [label, messageAttributes, want] of cases) {
      it(`lineage: ${label}`, () => {
        const record = sqsRecord("{}", { messageAttributes });
        expect(lineageOf(record)).to.deep.equal({ originMessageId: want.origin === "own" ? record.messageId : want.origin, deferrals: want.deferrals });
      });
    }

    it("carries attributes in the SQS API's spelling (binary decoded from base64), dropping the old lineage", () => {
      expect(
        carriedAttributes({
          a: attr("x", "String.custom"),
          b: { dataType: "Binary", binaryValue: "AQID", stringListValues: [], binaryListValues: [] },
          [ORIGIN_ATTRIBUTE]: attr("o"),
          [DEFERRALS_ATTRIBUTE]: attr("1", "Number"),
        }),
      ).to.deep.equal({ a: { DataType: "String.custom", StringValue: "x" }, b: { DataType: "Binary", BinaryValue: Buffer.from([1, 2, 3]) } });
    });

    it("counts a copy's size as SQS does: body plus attribute names, types and values", () => {
      expect(entryBytes({ MessageBody: "é", MessageAttributes: { n: { DataType: "Number", StringValue: "12" }, b: { DataType: "Binary", BinaryValue: new Uint8Array(3) } } })).to.equal(2 + (1 + 6 + 2) + (1 + 6 + 3));
    });

    it("chunks by 10 entries and by the 256 KiB payload budget; an oversized entry goes alone", () => {
      const ten = (n: number) => Array.from({ length: n }, () => 1);
      expect(chunkEntries(ten(21), (x) => x).map((c) => c.length)).to.deep.equal([10, 10, 1]);
      const half = MAX_BATCH_BYTES / 2;
      expect(chunkEntries([half, half, 1, MAX_BATCH_BYTES + 1, 1], (x) => x)).to.deep.equal([[half, half], [1], [MAX_BATCH_BYTES + 1], [1]]);
      expect(chunkEntries([], (x: number) => x)).to.deep.equal([]);
    });
  });
});
