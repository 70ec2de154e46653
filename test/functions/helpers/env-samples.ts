/**
 * A complete sample of every function's environment, as the program would write it: the values,
 * and their env built with the function's own codec. Tests spread a sample's env and override a variable.
 */
import { HOUSEKEEPING_ENV, TERMINATION_ENV } from "../../../functions/fleet/env";
import { DLQ_ENV, IDLE_ENV, SCALER_ENV, WINDOW_ENV } from "../../../functions/ingest/env";
import { REFILL_ENV } from "../../../functions/pool/env";
import { LAUNCHER_ENV } from "../../../functions/retraining/env";
import type { EnvCodec, EnvFields } from "../../../functions/shared/env";
import { WORKER_ENV } from "../../../functions/worker/env";

const URL = "https://sqs.us-east-1.amazonaws.com/123456789012/q";
const GPU = {
  instanceIdParam: "/encache/dev/gpu/instance_id",
  nameTag: "encache-gpu-worker-dev",
  servicePort: 8080,
  servicePath: "/ingest",
  requestTimeoutMs: 10_000,
  quarantineQueueUrl: URL,
};
/** Fleet mode's two extra GPU variables (`gpu.capacity.mode: fleet`): both set, or neither. */
const GPU_FLEET = { fleetGroupName: "encache-gpu-fleet-prod", fleetServiceHost: "internal-encache-gpu-1234.us-east-1.elb.amazonaws.com" };
const FLEET = { jobsTable: "jobs", retentionDays: 7, runnerParameterPath: "/runs-fleet/dev/runners" };

/** Any function's codec, as the table below holds them. */
export type AnyCodec = Pick<EnvCodec<EnvFields>, "fields"> & { parse(env: NodeJS.ProcessEnv): unknown; encode(values: never): Record<string, string> };

export interface Case {
  name: string;
  codec: AnyCodec;
  values: Record<string, unknown>;
}

export const ENV_SAMPLES: Case[] = [
  { name: "ingest window", codec: WINDOW_ENV, values: { ...GPU, ingestQueueUrl: URL, retrySeconds: 10, bootGraceSeconds: 600 } },
  { name: "ingest window, fleet mode", codec: WINDOW_ENV, values: { ...GPU, ...GPU_FLEET, ingestQueueUrl: URL, retrySeconds: 10, bootGraceSeconds: 600 } },
  {
    name: "ingest DLQ consumer",
    codec: DLQ_ENV,
    values: {
      ...GPU,
      dlqUrl: URL,
      visibilityExtensionSeconds: 900,
      maxAgeSeconds: 1_123_200,
      bootParkSeconds: 10,
      capacityRetrySeconds: 120,
      bootGraceSeconds: 600,
    },
  },
  {
    name: "ingest DLQ consumer, fleet mode",
    codec: DLQ_ENV,
    values: {
      ...GPU,
      ...GPU_FLEET,
      dlqUrl: URL,
      visibilityExtensionSeconds: 900,
      maxAgeSeconds: 1_123_200,
      bootParkSeconds: 10,
      capacityRetrySeconds: 120,
      bootGraceSeconds: 600,
    },
  },
  {
    name: "ingest GPU fleet scaler",
    codec: SCALER_ENV,
    values: {
      fleetGroupName: "encache-gpu-fleet-prod",
      servicePort: 8080,
      statusPath: "/status",
      requestTimeoutMs: 10_000,
      idleStopMinutes: 30,
      holdTag: "encache:gpu-hold",
      windowsPerInstance: 500,
      scaleInCooldownSeconds: 600,
      spotPercent: 75,
      spotBreakerInterruptions: 2,
      spotBreakerWindowMinutes: 15,
      spotBreakerCooldownMinutes: 30,
      ingestQueueUrl: URL,
      dlqUrl: URL,
    },
  },
  {
    name: "ingest GPU idle",
    codec: IDLE_ENV,
    values: {
      instanceIdParam: GPU.instanceIdParam,
      servicePort: 8080,
      statusPath: "/status",
      requestTimeoutMs: 10_000,
      idleStopMinutes: 30,
      holdTag: "encache:gpu-hold",
      ingestQueueUrl: URL,
      dlqUrl: URL,
    },
  },
  {
    name: "retraining launcher",
    codec: LAUNCHER_ENV,
    values: {
      cluster: "platform",
      taskDefinitionArn: "arn:aws:ecs:us-east-1:123456789012:task-definition/tradai-strategy-generic-dev:3",
      taskDefinitionFamily: "tradai-strategy-generic",
      subnets: ["subnet-1", "subnet-2"],
      securityGroups: ["sg-1"],
      containerName: "strategy",
      useSpot: true,
      spotFallback: "on-demand",
      stateTable: "state",
      maxConcurrentTasks: 5,
      environment: "dev",
      quarantineQueueUrl: URL,
      retrainingQueueUrl: URL,
      deferDelaySeconds: 60,
      intentTable: "intents",
      intentRetentionSeconds: 1_468_800,
      maxReceiveCount: 3,
    },
  },
  { name: "fleet termination", codec: TERMINATION_ENV, values: { ...FLEET, queueUrl: URL, quarantineQueueUrl: URL } },
  {
    name: "fleet housekeeping",
    codec: HOUSEKEEPING_ENV,
    values: {
      ...FLEET,
      queueUrl: URL,
      quarantineQueueUrl: URL,
      maxRuntimeMinutes: 360,
      ssmMinAgeMinutes: 15,
      pools: ["default"],
      instancePrices: { "c7g.xlarge": 0.145 },
      timeMarginMs: 15_000,
      managedTagKey: "runs-fleet:managed",
      managedTagValue: "true",
      poolTagKey: "runs-fleet:pool",
      environmentTagKey: "encache:environment",
      environment: "dev",
    },
  },
  {
    name: "pool refill",
    codec: REFILL_ENV,
    values: {
      classes: [
        {
          name: "gpu-small",
          queueUrl: URL,
          launchTemplateId: "lt-1",
          size: 2,
          instanceTypes: ["g5.xlarge"],
          cpu: 4,
          memoryMib: 16_384,
          usageClass: "on-demand",
        },
      ],
      claimTableName: "claims",
      poolTag: "encache-warm-pool-dev",
      poolTagKey: "encache:pool",
      poolClassTagKey: "encache:pool-class",
      leaseSeconds: 300,
      quarantineQueueUrl: URL,
    },
  },
  {
    name: "worker",
    codec: WORKER_ENV,
    values: {
      workQueueUrl: URL,
      quarantineQueueUrl: URL,
      concurrency: 4,
      waitTimeSeconds: 20,
      idleWindowSeconds: 30,
      maxProtectedSeconds: 14_400,
      defaultVisibilitySeconds: 900,
      maxVisibilitySeconds: 43_200,
      heartbeatSeconds: 60,
      retryDelaySeconds: 60,
      shutdownGraceSeconds: 100,
      protectionExpiresMinutes: 60,
      executables: { resize: { command: "/usr/bin/resize", args: ["--fast"] } },
      scratchDir: "/scratch",
      jobsTable: "worker-jobs",
    },
  },
];

/** The env a sample's codec writes for its values. */
export function sampleEnv(name: string): Record<string, string> {
  const sample = ENV_SAMPLES.find((c) => c.name === name);
  if (!sample) throw new Error(`no env sample named ${name}`);
  return sample.codec.encode(sample.values as never);
}
