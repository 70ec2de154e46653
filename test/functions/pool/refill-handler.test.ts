import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { RunInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { createRefillHandler } from "../../../functions/pool/refill-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { CLS, REFILL_DLQ, arrange } from "../helpers/pool-refill";

describe("pool refill", () => {
  describe("handler", () => {
    it("runs a class once per batch when several of its messages arrive together, and acknowledges them all", async () => {
      const t = arrange([], 2);
      const records = [sqsRecord({ resource_class: "gpu-small", scheduled_time: "a" }), sqsRecord({ resource_class: "gpu-small", scheduled_time: "b" })];

      const response = await createRefillHandler(t.deps)(sqsEvent(...records));

      expect(response.batchItemFailures).to.deep.equal([]);
      expect(t.ec2.calls("DescribeInstancesCommand")).to.equal(1);
      expect(t.ec2.calls("RunInstancesCommand")).to.equal(1);
      expect(t.adverts()).to.have.length(2);
      expect(t.logger.withStep("refill_shared_run")).to.have.length(1);
    });

    it("runs each class of a batch separately, under its own lease, and shares a run only within a class", async () => {
      const t = arrange([], 1);
      t.config.classes.push({ ...CLS, name: "gpu-large", queueUrl: `${CLS.queueUrl}-large`, launchTemplateId: "lt-large", size: 1 });
      const records = [
        sqsRecord({ resource_class: "gpu-small", scheduled_time: "a" }),
        sqsRecord({ resource_class: "gpu-large", scheduled_time: "a" }),
        sqsRecord({ resource_class: "gpu-small", scheduled_time: "b" }),
      ];

      const response = await createRefillHandler(t.deps)(sqsEvent(...records));

      expect(response.batchItemFailures).to.deep.equal([]);
      expect(t.logger.withStep("pool_counted").map((e) => e.fields.resource_class)).to.have.members(["gpu-small", "gpu-large"]);
      expect(t.ec2.runs.map((r) => r.LaunchTemplate?.LaunchTemplateId)).to.have.members(["lt-0123", "lt-large"]);
      expect(t.table.mock.commandCalls(PutItemCommand).map((c) => c.args[0].input.Item?.["instance_id"]?.S)).to.have.members([
        "lease#refill#gpu-small",
        "lease#refill#gpu-large",
      ]);
      expect(t.logger.withStep("refill_shared_run").map((e) => e.fields)).to.deep.equal([
        { step: "refill_shared_run", resource_class: "gpu-small", message_id: records[2]!.messageId },
      ]);
    });

    it("fails every message of a class whose shared run failed", async () => {
      const t = arrange([], 1);
      t.ec2.mock.on(RunInstancesCommand).rejects(new Error("boom"));
      const records = [sqsRecord({ resource_class: "gpu-small", scheduled_time: "a" }), sqsRecord({ resource_class: "gpu-small", scheduled_time: "b" })];

      const response = await createRefillHandler(t.deps)(sqsEvent(...records));

      expect(response.batchItemFailures.map((f) => f.itemIdentifier)).to.have.members(records.map((r) => r.messageId));
      expect(t.ec2.calls("RunInstancesCommand")).to.equal(1);
    });

    it("refills the class the scheduled message names", async () => {
      const t = arrange([], 1);

      const response = await createRefillHandler(t.deps)(sqsEvent(sqsRecord({ resource_class: "gpu-small", scheduled_time: "2026-01-01T00:00:00Z" })));

      expect(response.batchItemFailures).to.deep.equal([]);
      expect(t.ec2.calls("RunInstancesCommand")).to.equal(1);
      expect(t.metrics.published).to.equal(1);
    });

    const quarantined: Array<[string, string | Record<string, unknown>, RegExp]> = [
      ["not JSON", "{", /not JSON/],
      ["missing resource_class", { scheduled_time: "x" }, /resource_class/],
      ["JSON that is not an object", "[]", /^schema: body: \S/],
      ["an empty object", {}, /^schema: resource_class: [^;]+; scheduled_time: [^;]+$/],
      ["an unknown class", { resource_class: "tpu", scheduled_time: "x" }, /unknown resource_class tpu/],
    ];
    for (const [title, body, reason] of quarantined) {
      it(`quarantines ${title} to the refill DLQ with the reason`, async () => {
        const t = arrange();

        const response = await createRefillHandler(t.deps)(sqsEvent(sqsRecord(body)));

        expect(response.batchItemFailures).to.deep.equal([]);
        const sent = t.sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input;
        expect(sent?.QueueUrl).to.equal(REFILL_DLQ);
        expect(sent?.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(reason);
        expect(t.ec2.mock.calls()).to.have.length(0);
      });
    }

    it("reports a failed run as a batch item failure", async () => {
      const t = arrange([], 1);
      t.ec2.mock.on(RunInstancesCommand).rejects(new Error("boom"));
      const record = sqsRecord({ resource_class: "gpu-small", scheduled_time: "x" });

      const response = await createRefillHandler(t.deps)(sqsEvent(record));

      expect(response.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    });
  });
});
