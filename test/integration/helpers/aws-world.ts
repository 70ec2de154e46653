import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  EC2Client,
  RunInstancesCommand,
  StopInstancesCommand,
  TerminateInstancesCommand,
} from "@aws-sdk/client-ec2";
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { GetParameterCommand, PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { CreateClusterCommand, type ECSClient, RegisterTaskDefinitionCommand } from "@aws-sdk/client-ecs";

export const GPU_PARAM = "/encache/dev/gpu/instance_id";
export const GPU_NAME_TAG = "encache-gpu-worker-dev";

export interface Queue {
  url: string;
  arn: string;
}

/** Clients built after the root hook has set AWS_ENDPOINT_URL, so they talk to moto. */
export class AwsWorld {
  readonly ssm = new SSMClient({});
  readonly ec2 = new EC2Client({});
  readonly sqs = new SQSClient({});
  private static amiId: string | undefined;

  async createQueue(name: string, attributes: Record<string, string> = {}): Promise<Queue> {
    const { QueueUrl } = await this.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    if (!QueueUrl) throw new Error(`no URL for queue ${name}`);
    const { Attributes } = await this.sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }));
    return { url: QueueUrl, arn: Attributes?.QueueArn ?? "" };
  }

  async send(queue: Queue, body: string): Promise<string> {
    const { MessageId } = await this.sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: body }));
    return MessageId ?? "";
  }

  async depth(queue: Queue): Promise<{ visible: number; notVisible: number }> {
    const { Attributes } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queue.url,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
      }),
    );
    return {
      visible: Number(Attributes?.ApproximateNumberOfMessages),
      notVisible: Number(Attributes?.ApproximateNumberOfMessagesNotVisible),
    };
  }

  async receiveAll(queue: Queue) {
    const out = await this.sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, MessageAttributeNames: ["All"] }));
    return out.Messages ?? [];
  }

  async setGpuParam(value: string): Promise<void> {
    await this.ssm.send(new PutParameterCommand({ Name: GPU_PARAM, Value: value, Type: "String", Overwrite: true }));
  }

  async gpuParam(): Promise<string | undefined> {
    return (await this.ssm.send(new GetParameterCommand({ Name: GPU_PARAM }))).Parameter?.Value;
  }

  /** Any AMI moto ships with; moto rejects unknown ids. Looked up once per run. */
  async anyAmi(): Promise<string> {
    if (!AwsWorld.amiId) {
      const { Images } = await this.ec2.send(new DescribeImagesCommand({ Owners: ["amazon"] }));
      AwsWorld.amiId = Images?.find((i) => i.ImageId)?.ImageId;
      if (!AwsWorld.amiId) throw new Error("moto offered no AMI");
    }
    return AwsWorld.amiId;
  }

  async launchGpu(state: "running" | "stopped" | "terminated", nameTag = GPU_NAME_TAG): Promise<string> {
    const out = await this.ec2.send(
      new RunInstancesCommand({
        ImageId: await this.anyAmi(),
        InstanceType: "g5.xlarge",
        MinCount: 1,
        MaxCount: 1,
        TagSpecifications: [{ ResourceType: "instance", Tags: [{ Key: "Name", Value: nameTag }] }],
      }),
    );
    const id = out.Instances?.[0]?.InstanceId;
    if (!id) throw new Error("RunInstances returned no instance");
    if (state === "stopped") await this.ec2.send(new StopInstancesCommand({ InstanceIds: [id] }));
    if (state === "terminated") await this.ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
    return id;
  }

  async instanceState(id: string): Promise<string | undefined> {
    const out = await this.ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
    return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
  }
}

/**
 * A FARGATE + FARGATE_SPOT cluster with a strategy task definition that moto's RunTask accepts,
 * and the network a launch needs: moto's RunTask answers 500 unless the container sets memory,
 * subnets must exist in its EC2 (the default VPC's), and it wants explicit security groups.
 */
export async function createFargateWorld(
  ecs: ECSClient,
  ec2: EC2Client,
  names: { cluster: string; family: string },
): Promise<{ subnets: string[]; securityGroups: string[] }> {
  await ecs.send(
    new CreateClusterCommand({
      clusterName: names.cluster,
      capacityProviders: ["FARGATE", "FARGATE_SPOT"],
      defaultCapacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }],
    }),
  );
  await ecs.send(
    new RegisterTaskDefinitionCommand({
      family: names.family,
      requiresCompatibilities: ["FARGATE"],
      networkMode: "awsvpc",
      cpu: "1024",
      memory: "2048",
      containerDefinitions: [{ name: "strategy", image: "strategy:dev", memory: 2048, essential: true }],
    }),
  );
  const subnets = (await ec2.send(new DescribeSubnetsCommand({}))).Subnets?.map((s) => s.SubnetId ?? "") ?? [];
  const securityGroups = (await ec2.send(new DescribeSecurityGroupsCommand({ GroupNames: ["default"] }))).SecurityGroups?.map((g) => g.GroupId ?? "") ?? [];
  return { subnets: subnets.slice(0, 2), securityGroups };
}
