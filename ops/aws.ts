/**
 * The AWS clients `ops` uses, with the caller's credentials and endpoints from the usual chain
 * (AWS_PROFILE, AWS_ENDPOINT_URL…): the local run points AWS_ENDPOINT_URL at its operator stand-in.
 */
import { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { EC2Client } from "@aws-sdk/client-ec2";
import { ECSClient } from "@aws-sdk/client-ecs";
import { SQSClient } from "@aws-sdk/client-sqs";
import { STSClient } from "@aws-sdk/client-sts";

export interface OpsClients {
  sqs: SQSClient;
  cloudwatch: CloudWatchClient;
  ecs: ECSClient;
  ec2: EC2Client;
  autoscaling: AutoScalingClient;
  sts: STSClient;
}

/**
 * `endpoint` is for the local run only (its operator stand-in), which checks no signature: there the
 * credentials are placeholders when the environment has none. On AWS it is left out.
 */
export function opsClients(region: string, endpoint?: string): OpsClients {
  const local =
    endpoint === undefined
      ? {}
      : { endpoint, ...(process.env.AWS_ACCESS_KEY_ID ? {} : { credentials: { accessKeyId: "ops-local", secretAccessKey: "ops-local" } }) };
  const config = { region, ...local };
  return {
    sqs: new SQSClient(config),
    cloudwatch: new CloudWatchClient(config),
    ecs: new ECSClient(config),
    ec2: new EC2Client(config),
    autoscaling: new AutoScalingClient(config),
    sts: new STSClient(config),
  };
}

/** An AWS error as one line: its code and message (AccessDenied names the action it lacked). */
export function awsErrorLine(err: unknown): string {
  const e = err as { name?: string; message?: string; Code?: string };
  const code = e.Code ?? e.name ?? "Error";
  return `${code}: ${e.message ?? String(err)}`;
}
