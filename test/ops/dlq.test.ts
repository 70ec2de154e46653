/**
 * `ops dlq redrive` names its destination: the DLQ's source queue from the stack's outputs. Without
 * a DestinationArn, SQS returns each message to its DeadLetterQueueSourceArn, and a message the code
 * sent to the DLQ itself has none, so the task fails on it.
 */
import { GetQueueAttributesCommand, ListMessageMoveTasksCommand, SQSClient, StartMessageMoveTaskCommand } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { opsClients } from "../../ops/aws";
import { DlqRefusal, planRedrive, redrive } from "../../ops/dlq";
import { parseOutputs, queueNamed, type StackOutputs } from "../../ops/outputs";

const arn = (name: string) => `arn:aws:sqs:us-east-1:123456789012:${name}-abc1234`;
const url = (name: string) => `https://sqs.us-east-1.amazonaws.com/123456789012/${name}-abc1234`;

const OUTPUTS: StackOutputs = parseOutputs(
  JSON.stringify({
    opsQueues: {
      worker: { url: url("worker"), arn: arn("worker"), kind: "source", dlq: "worker-dlq" },
      "worker-dlq": { url: url("worker-dlq"), arn: arn("worker-dlq"), kind: "dlq", source: "worker" },
      ingest: { url: url("ingest"), arn: arn("ingest"), kind: "source", dlq: "ingest-dlq" },
      "ingest-dlq": { url: url("ingest-dlq"), arn: arn("ingest-dlq"), kind: "dlq", source: "ingest", consumed: true },
      "ingest-quarantine": { url: url("ingest-quarantine"), arn: arn("ingest-quarantine"), kind: "quarantine" },
      orphan: { url: url("orphan"), arn: arn("orphan"), kind: "dlq", source: "gone" },
    },
    clusterName: "cluster",
    gpuInstanceId: "i-1",
    opsGpu: { mode: "instance", holdTag: "encache:gpu-hold", idleStopMinutes: 30 },
    operatorPolicyArn: "arn:aws:iam::123456789012:policy/encache-operator-dev",
  }),
  "test",
);

describe("ops dlq redrive: the move task's destination", () => {
  let sqs: ReturnType<typeof mockClient>;
  beforeEach(() => {
    sqs = mockClient(SQSClient);
    sqs.on(GetQueueAttributesCommand).resolves({ Attributes: { ApproximateNumberOfMessages: "3" } });
    sqs.on(ListMessageMoveTasksCommand).resolves({ Results: [{ Status: "COMPLETED", ApproximateNumberOfMessagesMoved: 3 }] });
    sqs.on(StartMessageMoveTaskCommand).resolves({ TaskHandle: "t" });
  });
  afterEach(() => sqs.restore());

  const cases = [
    { dlq: "worker-dlq", destination: "worker" },
    { dlq: "ingest-dlq", destination: "ingest" },
  ];
  for (const c of cases) {
    it(`${c.dlq}: moves every message to ${c.destination}, whether SQS or the code put it there`, async () => {
      // Prepare
      const q = queueNamed(OUTPUTS, c.dlq);
      const ops = opsClients("us-east-1");
      // Act
      const plan = await planRedrive(ops, OUTPUTS, q);
      const task = await redrive(ops, q, plan.destination, { pollMs: 1, rate: 10 });
      // Assess
      expect(plan).to.deep.include({ depth: 3, source: c.destination });
      expect(task.status).to.equal("COMPLETED");
      expect(sqs.commandCalls(StartMessageMoveTaskCommand).map((call) => call.args[0].input)).to.deep.equal([
        { SourceArn: arn(c.dlq), DestinationArn: arn(c.destination), MaxNumberOfMessagesPerSecond: 10 },
      ]);
    });
  }

  const refused = [
    { queue: "ingest-quarantine", message: /ingest-quarantine is a quarantine queue, not the DLQ of a source queue/ },
    { queue: "orphan", message: /orphan's source gone is no queue of this stack's outputs/ },
  ];
  for (const r of refused) {
    it(`refuses ${r.queue} before starting anything`, async () => {
      // Act
      const error = await planRedrive(opsClients("us-east-1"), OUTPUTS, queueNamed(OUTPUTS, r.queue)).then(
        () => undefined,
        (err: Error) => err,
      );
      // Assess
      expect(error).to.be.instanceOf(DlqRefusal);
      expect(error?.message).to.match(r.message);
      expect(sqs.commandCalls(StartMessageMoveTaskCommand)).to.have.length(0);
    });
  }
});
