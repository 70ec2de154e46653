import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { decideRelaunch, relaunchOrigin } from "../../../functions/retraining/interruption";
import { createRelaunchHandler, type RelaunchDeps } from "../../../functions/retraining/relaunch-handler";
import { RecordingLogger, RecordingMetrics } from "../helpers/telemetry";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";

const CLUSTER = "arn:aws:ecs:us-east-1:123456789012:cluster/platform-cluster";
const TASK_ID = "0123456789abcdef0123456789abcdef";
const TASK = `arn:aws:ecs:us-east-1:123456789012:task/platform-cluster/${TASK_ID}`;
const JOB = "6f1c7a4e-2b8d-5c0e-9a3f-5d7b1e2c4a68";
const RETRAINING_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/retraining";
const DLQ_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/retraining-interruptions-dlq";

/** An "ECS Task State Change" event as EventBridge puts it on the queue, with `detail` overridden. */
function taskStopped(detail: Record<string, unknown> = {}, env: Array<{ name: string; value: string }> | undefined = undefined): string {
  return JSON.stringify({
    version: "0",
    id: "e-1",
    "detail-type": "ECS Task State Change",
    source: "aws.ecs",
    account: "123456789012",
    region: "us-east-1",
    resources: [TASK],
    detail: {
      clusterArn: CLUSTER,
      taskArn: TASK,
      lastStatus: "STOPPED",
      desiredStatus: "STOPPED",
      stopCode: "SpotInterruption",
      stoppedReason: "Your Spot Task was interrupted.",
      startedBy: "retraining-scheduler",
      capacityProviderName: "FARGATE_SPOT",
      overrides: {
        containerOverrides: [
          {
            name: "strategy",
            environment: env ?? [
              { name: "JOB_ID", value: JOB },
              { name: "MODEL_NAME", value: "PascalStrategy-btc" },
              { name: "RETRAINING_TRIGGER", value: "scheduled" },
            ],
          },
        ],
      },
      ...detail,
    },
  });
}

describe("retraining/relaunch: tasks Fargate Spot interrupted are launched again", () => {
  describe("decideRelaunch", () => {
    it("a launcher task stopped by SpotInterruption: relaunch under relaunch-<task id>, with its model, trigger and job id", () => {
      expect(decideRelaunch(taskStopped(), CLUSTER)).to.deep.equal({
        kind: "relaunch",
        taskArn: TASK,
        origin: `relaunch-${TASK_ID}`,
        modelName: "PascalStrategy-btc",
        trigger: "scheduled",
        jobId: JOB,
      });
      expect(relaunchOrigin(TASK)).to.match(/^[A-Za-z0-9_-]{1,64}$/);
    });

    const skips: Array<[string, string, string]> = [
      ["another cluster's task", taskStopped({ clusterArn: "arn:aws:ecs:us-east-1:123456789012:cluster/other" }), "other_cluster"],
      ["a task stopped for another reason", taskStopped({ stopCode: "EssentialContainerExited" }), "not_spot_interruption"],
      ["a task still running", taskStopped({ lastStatus: "RUNNING", stopCode: undefined }), "not_spot_interruption"],
      ["a task the launcher did not start", taskStopped({ startedBy: "ecs-svc/123" }), "not_a_launcher_task"],
      [
        "a relaunch interrupted again",
        taskStopped({}, [
          { name: "JOB_ID", value: JOB },
          { name: "MODEL_NAME", value: "M" },
          { name: "RETRAINING_TRIGGER", value: "manual" },
          { name: "RELAUNCH_OF", value: TASK },
        ]),
        "relaunch_interrupted",
      ],
    ];
    for (const [label, body, reason] of skips)
      it(`skips ${label} (${reason})`, () => {
        expect(decideRelaunch(body, CLUSTER)).to.deep.equal({ kind: "skip", reason, taskArn: TASK });
      });

    const malformed: Array<[string, string, RegExp]> = [
      ["a body that is not JSON", "{", /^invalid_json: /],
      [
        "another event type",
        JSON.stringify({ source: "aws.ecs", "detail-type": "ECS Container Instance State Change", detail: {} }),
        /^not_a_task_state_change: /,
      ],
      ["a task ARN that is not one", taskStopped({ taskArn: "task-1" }), /^not_a_task_state_change: detail.taskArn/],
      ["no MODEL_NAME override", taskStopped({}, [{ name: "JOB_ID", value: JOB }]), /^missing_launch_overrides: MODEL_NAME/],
      [
        "a trigger the launcher refuses",
        taskStopped({}, [
          { name: "JOB_ID", value: JOB },
          { name: "MODEL_NAME", value: "M" },
          { name: "RETRAINING_TRIGGER", value: "cron" },
        ]),
        /^missing_launch_overrides: RETRAINING_TRIGGER/,
      ],
    ];
    for (const [label, body, reason] of malformed)
      it(`${label} is malformed, with the reason`, () => {
        const d = decideRelaunch(body, CLUSTER);
        expect(d.kind).to.equal("malformed");
        expect(d.kind === "malformed" ? d.reason : "").to.match(reason);
      });
  });

  describe("the consumer", () => {
    function harness() {
      const sqs = new SQSClient({});
      const sqsMock = mockClient(sqs);
      const logger = new RecordingLogger();
      const metrics = new RecordingMetrics();
      const deps: RelaunchDeps = { sqs, logger, metrics, config: { clusterArn: CLUSTER, retrainingQueueUrl: RETRAINING_URL, quarantineQueueUrl: DLQ_URL } };
      return { deps, sqsMock, logger, metrics };
    }

    it("sends one launch request per event to the launcher's queue, its origin the task's, logged and counted", async () => {
      // Prepare
      const t = harness();
      t.sqsMock.on(SendMessageCommand).resolves({ MessageId: "m" });
      // Act
      const res = await createRelaunchHandler(t.deps)(sqsEvent(sqsRecord(taskStopped())));
      // Assess
      expect(res.batchItemFailures).to.deep.equal([]);
      const sent = t.sqsMock.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
      expect(sent).to.have.length(1);
      expect(sent[0]?.QueueUrl).to.equal(RETRAINING_URL);
      expect(JSON.parse(sent[0]?.MessageBody ?? "{}")).to.deep.equal({
        model_name: "PascalStrategy-btc",
        trigger: "scheduled",
        relaunch_of: { task_arn: TASK, job_id: JOB },
      });
      expect(sent[0]?.MessageAttributes?.["retraining-origin-message-id"]).to.deep.equal({ DataType: "String", StringValue: `relaunch-${TASK_ID}` });
      expect(t.logger.withStep("relaunch_requested")).to.have.length(1);
      expect(t.metrics.count("SpotRelaunches")).to.equal(1);
    });

    it("a skipped event is acknowledged, logged relaunch_skipped and counted; nothing is sent", async () => {
      const t = harness();
      const res = await createRelaunchHandler(t.deps)(sqsEvent(sqsRecord(taskStopped({ stopCode: "UserInitiated" }))));
      expect(res.batchItemFailures).to.deep.equal([]);
      expect(t.sqsMock.commandCalls(SendMessageCommand)).to.have.length(0);
      expect(t.logger.withStep("relaunch_skipped")[0]?.fields).to.deep.include({ reason: "not_spot_interruption" });
      expect(t.metrics.count("RelaunchSkipped")).to.equal(1);
    });

    it("a malformed event goes to the interruptions DLQ with its reason, not retried", async () => {
      const t = harness();
      t.sqsMock.on(SendMessageCommand).resolves({ MessageId: "q" });
      const res = await createRelaunchHandler(t.deps)(sqsEvent(sqsRecord("{")));
      expect(res.batchItemFailures).to.deep.equal([]);
      const sent = t.sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input;
      expect(sent?.QueueUrl).to.equal(DLQ_URL);
      expect(sent?.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(/^invalid_json: /);
    });

    it("SendMessage failing: the record fails (SQS redelivers it; the launcher's intent keeps the relaunch to one task)", async () => {
      const t = harness();
      t.sqsMock.on(SendMessageCommand).rejects(new Error("sqs down"));
      const record = sqsRecord(taskStopped());
      const res = await createRelaunchHandler(t.deps)(sqsEvent(record));
      expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(t.logger.withStep("relaunch_requested")).to.have.length(0);
    });
  });
});
