import { type ECSClient, paginateListTasks, RunTaskCommand, type RunTaskCommandInput, type Task } from "@aws-sdk/client-ecs";
import type { LauncherConfig } from "./config";
import { strategyOf, type RetrainingMessage } from "./message";

/** Every task the launcher starts carries this `startedBy`; the capacity count filters on it. */
export const STARTED_BY = "retraining-scheduler";

export type CapacityProvider = "FARGATE" | "FARGATE_SPOT";

export function capacityProviderFor(useSpot: boolean): CapacityProvider {
  return useSpot ? "FARGATE_SPOT" : "FARGATE";
}

/** Running launcher tasks: ListTasks by startedBy with desired status RUNNING (pending ones count too), all pages. */
export async function countRunningTasks(ecs: ECSClient, cluster: string): Promise<number> {
  let count = 0;
  for await (const page of paginateListTasks({ client: ecs }, { cluster, startedBy: STARTED_BY, desiredStatus: "RUNNING" })) {
    count += page.taskArns?.length ?? 0;
  }
  return count;
}

export interface LaunchRequest {
  message: RetrainingMessage;
  messageId: string;
  jobId: string;
}

/**
 * The RunTask request of docs/parts/retraining.md: a capacity provider strategy (never `launchType`, which
 * cannot pick Spot), the container env overrides and tags of the original system, `startedBy`, no public
 * IP, and the SQS message id as `clientToken` so a redelivered message starts no second task.
 */
export function runTaskInput(config: LauncherConfig, r: LaunchRequest): RunTaskCommandInput {
  const strategy = strategyOf(r.message.modelName);
  return {
    cluster: config.cluster,
    taskDefinition: config.taskDefinition,
    count: 1,
    startedBy: STARTED_BY,
    clientToken: r.messageId,
    capacityProviderStrategy: [{ capacityProvider: capacityProviderFor(config.useSpot), weight: 1 }],
    networkConfiguration: {
      awsvpcConfiguration: { subnets: config.subnets, securityGroups: config.securityGroups, assignPublicIp: "DISABLED" },
    },
    overrides: {
      containerOverrides: [
        {
          name: config.containerName,
          environment: [
            { name: "JOB_ID", value: r.jobId },
            { name: "TRADING_MODE", value: "train" },
            { name: "STRATEGY", value: strategy },
            { name: "MODEL_NAME", value: r.message.modelName },
            { name: "RETRAINING_TRIGGER", value: r.message.trigger },
            { name: "ENVIRONMENT", value: config.environment },
          ],
        },
      ],
    },
    tags: [
      { key: "job_id", value: r.jobId },
      { key: "model_name", value: r.message.modelName },
      { key: "strategy", value: strategy },
      { key: "trigger", value: r.message.trigger },
      { key: "environment", value: config.environment },
    ],
  };
}

/** RunTask answers 200 with `failures` (capacity, bad subnet…) instead of throwing; that is a failed launch. */
export class LaunchFailedError extends Error {
  constructor(readonly failures: ReadonlyArray<{ arn?: string; reason?: string; detail?: string }>) {
    super(`RunTask started no task: ${failures.map((f) => [f.reason, f.detail].filter(Boolean).join(" ")).join("; ") || "no failure reason given"}`);
    this.name = "LaunchFailedError";
  }
}

export async function launchTask(ecs: ECSClient, input: RunTaskCommandInput): Promise<Task & { taskArn: string }> {
  const out = await ecs.send(new RunTaskCommand(input));
  const task = out.tasks?.find((t) => t.taskArn);
  if (!task?.taskArn) throw new LaunchFailedError(out.failures ?? []);
  return { ...task, taskArn: task.taskArn };
}
