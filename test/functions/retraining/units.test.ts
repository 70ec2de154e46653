import { expect } from "chai";
import { LaunchSlots } from "../../../functions/retraining/capacity";
import { parseLauncherConfig, resolveTaskDefinition } from "../../../functions/retraining/config";
import { carriedAttributes, chunkEntries, DEFERRALS_ATTRIBUTE, entryBytes, lineageOf, MAX_BATCH_BYTES, ORIGIN_ATTRIBUTE } from "../../../functions/retraining/defer";
import { sqsRecord } from "../helpers/sqs-events";
import { EnvConfigError } from "../../../functions/shared/env";
import { jobIdFor } from "../../../functions/retraining/job-id";
import { parseRetrainingMessage, strategyOf } from "../../../functions/retraining/message";
import { launcherMetrics } from "../../../functions/retraining/runtime-deps";

const ENV = {
  ECS_CLUSTER: "platform-cluster",
  ECS_SUBNETS: "subnet-a, subnet-b,",
  ECS_SECURITY_GROUPS: "sg-1",
  ENVIRONMENT: "dev",
  RETRAINING_STATE_TABLE: "retraining-state",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/retraining-dlq",
  RETRAINING_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/retraining",
};

describe("retraining/launcher units", () => {
  describe("config (seed 001's env table)", () => {
    it("applies the seed's defaults and resolves the family per environment", () => {
      const c = parseLauncherConfig(ENV);
      expect(c).to.deep.include({
        taskDefinition: "tradai-strategy-generic-dev",
        containerName: "strategy",
        useSpot: false,
        maxConcurrentTasks: 5,
        stateTable: "retraining-state",
        subnets: ["subnet-a", "subnet-b"],
        securityGroups: ["sg-1"],
        retrainingQueueUrl: "https://sqs.us-east-1.amazonaws.com/123456789012/retraining",
        deferDelaySeconds: 60,
      });
      expect(parseLauncherConfig({ ...ENV, DEFER_DELAY_SECONDS: "0" }).deferDelaySeconds).to.equal(0);
    });

    it("prefers ECS_TASK_DEFINITION_ARN over the family", () => {
      const arn = "arn:aws:ecs:us-east-1:123456789012:task-definition/tradai-strategy-generic-dev:7";
      expect(parseLauncherConfig({ ...ENV, ECS_TASK_DEFINITION_ARN: arn, USE_SPOT: "TRUE" })).to.deep.include({ taskDefinition: arn, useSpot: true });
      expect(resolveTaskDefinition(undefined, "fam", "prod")).to.equal("fam-prod");
    });

    const bad: Array<[string, Record<string, string>, RegExp]> = [
      ["no ECS_CLUSTER", { ECS_CLUSTER: "" }, /ECS_CLUSTER is required/],
      ["no subnets after trimming", { ECS_SUBNETS: " , " }, /ECS_SUBNETS is invalid/],
      ["USE_SPOT not a boolean", { USE_SPOT: "maybe" }, /USE_SPOT is invalid/],
      ["no RETRAINING_STATE_TABLE (the capacity lease lives there)", { RETRAINING_STATE_TABLE: "" }, /RETRAINING_STATE_TABLE is/],
      ["MAX_CONCURRENT_TASKS 0", { MAX_CONCURRENT_TASKS: "0" }, /MAX_CONCURRENT_TASKS is invalid/],
      ["no RETRAINING_QUEUE_URL (deferred messages are re-sent there)", { RETRAINING_QUEUE_URL: "" }, /RETRAINING_QUEUE_URL is required/],
      ["DEFER_DELAY_SECONDS above SQS's 900", { DEFER_DELAY_SECONDS: "901" }, /DEFER_DELAY_SECONDS is invalid/],
    ];
    for (const [label, patch, message] of bad) {
      it(`refuses ${label}`, () => {
        expect(() => parseLauncherConfig({ ...ENV, ...patch })).to.throw(EnvConfigError, message);
      });
    }
  });

  describe("message", () => {
    it("accepts the seed's body and ignores extra keys", () => {
      expect(parseRetrainingMessage(JSON.stringify({ model_name: "PascalStrategy", trigger: "manual", extra: 1 }))).to.deep.equal({
        ok: true,
        message: { modelName: "PascalStrategy", trigger: "manual" },
      });
    });

    it("strategy is the model name's segment before the first '-', as written (the seed's text, not its tag example)", () => {
      expect(strategyOf("PascalStrategy")).to.equal("PascalStrategy");
      expect(strategyOf("PascalStrategy-btc-v2")).to.equal("PascalStrategy");
    });
  });

  describe("job id", () => {
    it("is a stable UUID v5 per message id", () => {
      expect(jobIdFor("m-1")).to.equal(jobIdFor("m-1")).and.match(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(jobIdFor("m-1")).to.not.equal(jobIdFor("m-2"));
    });
  });

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

  describe("launch slots", () => {
    it("counts running tasks and this batch's launches against the cap, and a failed launch gives its slot back", () => {
      const slots = new LaunchSlots(1, 3);
      expect([slots.tryTake(), slots.tryTake(), slots.tryTake()]).to.deep.equal([true, true, false]);
      slots.release();
      expect(slots.tryTake()).to.equal(true);
      expect(slots.inUse).to.equal(3);
    });
  });

  describe("metrics", () => {
    it("emit EMF with exactly the Environment dimension (no service dimension)", () => {
      const lines: string[] = [];
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = ((chunk: string | Uint8Array) => {
        lines.push(String(chunk));
        return true;
      }) as typeof process.stdout.write;
      try {
        const metrics = launcherMetrics();
        metrics.addDimension("Environment", "dev");
        metrics.addMetric("ECSTasksLaunched", "Count", 1);
        metrics.publishStoredMetrics();
      } finally {
        process.stdout.write = write;
      }
      const emf = JSON.parse(lines.join("").trim().split("\n").pop() ?? "{}") as { _aws: { CloudWatchMetrics: Array<{ Dimensions: string[][] }> }; Environment: string };
      expect(emf._aws.CloudWatchMetrics[0]?.Dimensions).to.deep.equal([["Environment"]]);
      expect(emf.Environment).to.equal("dev");
    });
  });
});
