import {
  DescribeInstancesCommand,
  type DescribeInstancesCommandInput,
  type DescribeInstancesCommandOutput,
  EC2Client,
  EC2ServiceException,
} from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { mockClient } from "aws-sdk-client-mock";
import type { DlqConfig, WindowConfig } from "../../../functions/ingest/config";
import type { DlqHandlerDeps } from "../../../functions/ingest/dlq-handler";
import type { WindowHandlerDeps } from "../../../functions/ingest/window-handler";
import type { FetchFn } from "../../../functions/ingest/gpu-http";
import { RecordingLogger, RecordingMetrics } from "./telemetry";

export const PARAM = "/encache/gpu/instance_id";
export const NAME_TAG = "encache-gpu-worker";
export const DLQ_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq";
export const INGEST_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest";
export const QUARANTINE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-quarantine";

/** Both consumers' config in one: the window consumer reads a subset plus its own queue and retry. */
export type IngestTestConfig = DlqConfig & WindowConfig;

export function testConfig(overrides: Partial<IngestTestConfig> = {}): IngestTestConfig {
  return {
    instanceIdParam: PARAM,
    nameTag: NAME_TAG,
    servicePort: 8080,
    servicePath: "/ingest/window",
    requestTimeoutMs: 2000,
    quarantineQueueUrl: QUARANTINE_URL,
    dlqUrl: DLQ_URL,
    visibilityExtensionSeconds: 900,
    maxAgeSeconds: 1_123_200,
    bootParkSeconds: 20,
    capacityRetrySeconds: 120,
    bootGraceSeconds: 600,
    ingestQueueUrl: INGEST_URL,
    retrySeconds: 20,
    ...overrides,
  };
}

const clientOptions = { region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } };

/**
 * Fresh clients with aws-sdk-client-mock stubs on those instances only, plus recorders. The
 * DLQ deps are a superset of the window deps, so both handlers' tests use this.
 */
export function mockedIngestDeps(options: { fetch?: FetchFn; config?: Partial<IngestTestConfig> } = {}) {
  const ssm = new SSMClient(clientOptions);
  const ec2 = new EC2Client(clientOptions);
  const sqs = new SQSClient(clientOptions);
  const logger = new RecordingLogger();
  const metrics = new RecordingMetrics();
  const fetchCalls: { url: string; body: unknown }[] = [];
  const fetchHeaders: Record<string, string>[] = [];
  const defaultFetch: FetchFn = async (url, init) => {
    fetchCalls.push({ url, body: JSON.parse(String(init.body)) });
    fetchHeaders.push(Object.fromEntries(new Headers(init.headers).entries()));
    return new Response(JSON.stringify({ status: "ok" }), { status: 200 });
  };
  const deps: DlqHandlerDeps & WindowHandlerDeps & { config: IngestTestConfig } = {
    ssm,
    ec2,
    sqs,
    fetch: options.fetch ?? defaultFetch,
    // Never a VPC address in tests: the resolved IP only goes into the path, for assertions.
    gpuServiceUrl: (ip) => `http://127.0.0.1:8080/gpu-at/${ip}`,
    config: testConfig(options.config),
    logger,
    metrics,
    // One minute after the factory's SentTimestamp (test/functions/helpers/sqs-events.ts).
    now: () => 1_700_000_060_000,
  };
  return {
    deps,
    ssmMock: mockClient(ssm),
    ec2Mock: mockClient(ec2),
    sqsMock: mockClient(sqs),
    logger,
    metrics,
    fetchCalls,
    fetchHeaders,
  };
}

export interface FakeInstance {
  id: string;
  state: "pending" | "running" | "stopping" | "stopped" | "shutting-down" | "terminated";
  ip?: string;
  nameTag?: string;
  launchTime?: Date;
}

export function describeReply(...instances: FakeInstance[]): DescribeInstancesCommandOutput {
  return {
    $metadata: {},
    Reservations: instances.length
      ? [
          {
            Instances: instances.map((i) => ({
              InstanceId: i.id,
              State: { Name: i.state },
              ...(i.ip ? { PrivateIpAddress: i.ip } : {}),
              ...(i.launchTime ? { LaunchTime: i.launchTime } : {}),
            })),
          },
        ]
      : [],
  };
}

/** An error shaped like the SDK's deserialised service errors (EC2 has no modelled classes). */
export function ec2Error(name: string, message = name): EC2ServiceException {
  return new EC2ServiceException({ name, message, $fault: "client", $metadata: { httpStatusCode: 400 } });
}

/**
 * Answers DescribeInstances like EC2 would for `instances`: by id (unknown id →
 * InvalidInstanceID.NotFound) or by the tag:Name / instance-state-name filters. With
 * `emptyFirstPage`, a filtered answer starts with an empty page that carries a NextToken, as EC2's
 * pages may, and the matches come on the page that token asks for.
 */
export function fakeDescribeInstances(
  ec2Mock: ReturnType<typeof mockedIngestDeps>["ec2Mock"],
  instances: FakeInstance[],
  paging: { emptyFirstPage?: boolean } = {},
): void {
  ec2Mock.on(DescribeInstancesCommand).callsFake((input: DescribeInstancesCommandInput) => {
    if (input.InstanceIds) {
      const found = instances.filter((i) => input.InstanceIds?.includes(i.id));
      if (found.length === 0) throw ec2Error("InvalidInstanceID.NotFound", `The instance IDs '${input.InstanceIds.join(",")}' do not exist`);
      return describeReply(...found);
    }
    const filterValues = (name: string) => input.Filters?.find((f) => f.Name === name)?.Values;
    const tags = filterValues("tag:Name");
    const states = filterValues("instance-state-name");
    const matches = instances.filter((i) => (!tags || tags.includes(i.nameTag ?? NAME_TAG)) && (!states || states.includes(i.state)));
    if (paging.emptyFirstPage && input.NextToken !== "page:2") return { ...describeReply(), NextToken: "page:2" };
    return describeReply(...matches);
  });
}
