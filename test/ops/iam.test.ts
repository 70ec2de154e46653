/**
 * ops/iam.ts against what ops sends: every command driven through mocked clients, in both GPU
 * modes, must send exactly the actions its grants declare as called (the `implied` ones are SQS's
 * checks on the caller's behalf during a redrive, which the local platform's judge exercises).
 */
import { AutoScalingClient, DescribeAutoScalingGroupsCommand } from "@aws-sdk/client-auto-scaling";
import { CloudWatchClient, GetMetricStatisticsCommand } from "@aws-sdk/client-cloudwatch";
import { DescribeInstancesCommand, EC2Client } from "@aws-sdk/client-ec2";
import { DescribeServicesCommand, DescribeTasksCommand, ECSClient, GetTaskProtectionCommand, ListTasksCommand } from "@aws-sdk/client-ecs";
import { GetQueueAttributesCommand, ListMessageMoveTasksCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { GetCallerIdentityCommand, STSClient } from "@aws-sdk/client-sts";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { opsClients } from "../../ops/aws";
import { cancelRedrive, peek, planRedrive, redrive } from "../../ops/dlq";
import { holdGpu, readGpu, releaseGpu, sizeGpu, stopGpu } from "../../ops/gpu";
import { type GpuCapacityMode, operatorCalledActions } from "../../ops/iam";
import { parseOutputs, queueNamed, type StackOutputs } from "../../ops/outputs";
import { callerIdentity, readQuarantine, release } from "../../ops/quarantine";
import { readStatus } from "../../ops/status";

const arn = (name: string) => `arn:aws:sqs:us-east-1:123456789012:${name}`;
const url = (name: string) => `https://sqs.us-east-1.amazonaws.com/123456789012/${name}`;

function outputs(mode: GpuCapacityMode): StackOutputs {
  return parseOutputs(
    JSON.stringify({
      opsQueues: {
        ingest: { url: url("ingest"), arn: arn("ingest"), kind: "source", dlq: "ingest-dlq" },
        "ingest-dlq": { url: url("ingest-dlq"), arn: arn("ingest-dlq"), kind: "dlq", source: "ingest", consumed: true },
        "ingest-quarantine": { url: url("ingest-quarantine"), arn: arn("ingest-quarantine"), kind: "quarantine" },
        "pool-a": { url: url("pool-a"), arn: arn("pool-a"), kind: "source", dlq: "pool-a-dlq", advertClass: "a" },
      },
      clusterName: "cluster",
      workerServiceName: "worker",
      ...(mode === "fleet" ? { gpuFleetGroupName: "gpu-group" } : { gpuInstanceId: "i-1" }),
      opsGpu: { mode, holdTag: "encache:gpu-hold", idleStopMinutes: 30 },
      operatorPolicyArn: "arn:aws:iam::123456789012:policy/encache-operator-dev",
    }),
    "test",
  );
}

const PREFIX: Record<string, string> = {
  SQSClient: "sqs",
  CloudWatchClient: "cloudwatch",
  ECSClient: "ecs",
  EC2Client: "ec2",
  AutoScalingClient: "autoscaling",
};

describe("ops sends exactly the actions ops/iam.ts grants, in each GPU mode", () => {
  for (const mode of ["instance", "fleet"] as const) {
    it(`${mode} mode: every command, every call`, async () => {
      // Prepare
      const mocks = {
        SQSClient: mockClient(SQSClient),
        CloudWatchClient: mockClient(CloudWatchClient),
        ECSClient: mockClient(ECSClient),
        EC2Client: mockClient(EC2Client),
        AutoScalingClient: mockClient(AutoScalingClient),
      };
      const sts = mockClient(STSClient);
      try {
        mocks.SQSClient.onAnyCommand().resolves({});
        mocks.SQSClient.on(GetQueueAttributesCommand).resolves({ Attributes: { ApproximateNumberOfMessages: "2" } });
        mocks.SQSClient.on(ReceiveMessageCommand).resolves({
          Messages: [
            {
              MessageId: "m1",
              ReceiptHandle: "h1",
              Body: "{}",
              MessageAttributes: {
                "quarantine-reason": { DataType: "String", StringValue: "bad" },
                "source-queue-arn": { DataType: "String", StringValue: arn("ingest") },
              },
            },
          ],
        });
        mocks.SQSClient.on(SendMessageCommand).resolves({ MessageId: "n1" });
        mocks.SQSClient.on(ListMessageMoveTasksCommand)
          .resolvesOnce({ Results: [] })
          .resolvesOnce({ Results: [{ Status: "COMPLETED", ApproximateNumberOfMessagesMoved: 2 }] })
          .resolves({ Results: [{ Status: "RUNNING", TaskHandle: "t" }] });
        mocks.CloudWatchClient.on(GetMetricStatisticsCommand).resolves({ Datapoints: [] });
        mocks.ECSClient.on(DescribeServicesCommand).resolves({ services: [{ desiredCount: 1, runningCount: 1 }] });
        mocks.ECSClient.on(ListTasksCommand).resolves({ taskArns: ["arn:aws:ecs:us-east-1:123456789012:task/cluster/t1"] });
        mocks.ECSClient.on(DescribeTasksCommand).resolves({
          tasks: [{ taskArn: "arn:aws:ecs:us-east-1:123456789012:task/cluster/t1", lastStatus: "RUNNING" }],
        });
        mocks.ECSClient.on(GetTaskProtectionCommand).resolves({ protectedTasks: [] });
        mocks.EC2Client.onAnyCommand().resolves({});
        mocks.EC2Client.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [{ InstanceId: "i-1", State: { Name: "running" }, Tags: [] }] }] });
        mocks.AutoScalingClient.onAnyCommand().resolves({});
        mocks.AutoScalingClient.on(DescribeAutoScalingGroupsCommand).resolves({
          AutoScalingGroups: [
            {
              AutoScalingGroupName: "gpu-group",
              DesiredCapacity: 1,
              MinSize: 0,
              MaxSize: 4,
              DefaultCooldown: 300,
              AvailabilityZones: [],
              HealthCheckType: "EC2",
              CreatedTime: new Date(),
              Tags: [],
            },
          ],
        });
        sts.on(GetCallerIdentityCommand).resolves({ Arn: "arn:aws:sts::123456789012:assumed-role/operator/me" });
        const o = outputs(mode);
        const c = opsClients("us-east-1");
        const dlq = queueNamed(o, "ingest-dlq");

        // Act: every command's calls
        await readStatus(c, "dev", o);
        await peek(c, o, dlq, 1);
        await planRedrive(c, o, dlq);
        await redrive(c, dlq, queueNamed(o, "ingest"), { pollMs: 1 });
        await cancelRedrive(c, dlq);
        await release(c, o, await readQuarantine(c, o), await callerIdentity(c));
        const gpu = await readGpu(c, o);
        await holdGpu(c, o, "true");
        await releaseGpu(c, o);
        await stopGpu(c, o, gpu);
        if (mode === "fleet") await sizeGpu(c, o, gpu, 2);

        // Assess
        const sent = new Set<string>();
        for (const [client, mock] of Object.entries(mocks))
          for (const call of mock.calls()) sent.add(`${PREFIX[client]}:${call.args[0].constructor.name.replace(/Command$/, "")}`);
        expect([...sent].sort()).to.deep.equal(operatorCalledActions(mode));
      } finally {
        for (const m of [...Object.values(mocks), sts]) m.restore();
      }
    });
  }
});
