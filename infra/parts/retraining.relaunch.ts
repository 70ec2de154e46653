/**
 * Part 2's relaunch of tasks Fargate Spot takes back (docs/parts/retraining.md, "Spot
 * interruptions"): an EventBridge rule on this stack's cluster matches ECS Task State Change events
 * of launcher tasks stopped with `SpotInterruption`, and delivers them to the interruptions queue
 * (with its DLQ and depth alarm, like every queue here); the relaunch consumer turns each into one
 * launch request on the retraining queue, which the launcher runs on FARGATE under its cap. Declared
 * only with `useSpot`: without Spot nothing is interrupted.
 */
import { ruleMaySend } from "../lib/rule-queue-policy";
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { metricsNamespace } from "../../policy/contract";
import { STARTED_BY } from "../../functions/retraining/ecs";
import { RELAUNCH_ENV } from "../../functions/retraining/env";
import { RELAUNCH_GRANTS } from "../../functions/retraining/iam";
import { ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import type { Statement } from "../iam/document";
import { statementsFor } from "../iam/grants";
import { functionEnvironment, type PartScope } from "./part-args";
import { RELAUNCH_QUEUE, type RetrainingArgs } from "./retraining.config";

/** Handler entry point, relative to the repository root. */
export const RELAUNCH_ENTRY = "functions/retraining/relaunch.ts";

/**
 * EventBridge's retries of a delivery to the queue that fails (the queue's policy, a throttle)
 * before the event goes to the DLQ: its maximum age is a day, enough to outlast a broken deploy.
 */
export const RELAUNCH_TARGET_RETRY = { maximumRetryAttempts: 185, maximumEventAgeInSeconds: 86_400 } as const;

/**
 * The rule's pattern: this cluster's launcher tasks (startedBy) that stopped because Fargate Spot
 * took their capacity back (stopCode SpotInterruption). Pure.
 * https://docs.aws.amazon.com/AmazonECS/latest/developerguide/ecs_task_events.html
 */
export function spotInterruptionPattern(clusterArn: string): Record<string, unknown> {
  return {
    source: ["aws.ecs"],
    "detail-type": ["ECS Task State Change"],
    detail: { clusterArn: [clusterArn], lastStatus: ["STOPPED"], stopCode: ["SpotInterruption"], startedBy: [STARTED_BY] },
  };
}

/** The relaunch consumer's statements, derived from the grants beside its code. Pure. */
export function relaunchStatements(a: { retrainingQueueArn: pulumi.Input<string>; interruptionsDlqArn: pulumi.Input<string> }): Statement[] {
  return statementsFor(RELAUNCH_GRANTS, {
    "retraining-queue": { resource: a.retrainingQueueArn },
    "interruptions-dlq": { resource: a.interruptionsDlqArn },
  });
}

export interface Relaunch {
  queue: ManagedQueue;
  rule: aws.cloudwatch.EventRule;
  consumer: QueueConsumer;
}

/** The rule, the interruptions queue and its policies, and the relaunch consumer. */
export function createRelaunch({ name, args, tags, parent }: PartScope<RetrainingArgs>, retrainingQueue: ManagedQueue): Relaunch {
  const cluster = args.cluster.cluster;
  const queue = new ManagedQueue(
    `${name}-interruptions`,
    {
      visibilityTimeoutSeconds: RELAUNCH_QUEUE.visibilitySeconds,
      messageRetentionSeconds: RELAUNCH_QUEUE.retentionSeconds,
      maxReceiveCount: args.platform.maxReceiveCount,
      alarmActions: args.platform.alarmActions,
      protectDlq: args.platform.deletionProtection,
      tags,
    },
    { parent },
  );
  const rule = new aws.cloudwatch.EventRule(
    `${name}-spot-interruptions`,
    {
      description: "Retraining tasks Fargate Spot interrupted: relaunched on FARGATE by the relaunch consumer.",
      eventPattern: pulumi.output(cluster.arn).apply((arn) => JSON.stringify(spotInterruptionPattern(arn))),
      tags,
    },
    { parent },
  );
  ruleMaySend(`${name}-interruptions-policy`, { queue: queue.queue, rule, sid: "SpotInterruptionRule" }, parent);
  ruleMaySend(`${name}-interruptions-dlq-policy`, { queue: queue.dlq, rule, sid: "SpotInterruptionRule" }, parent);
  new aws.cloudwatch.EventTarget(
    `${name}-spot-interruptions-target`,
    { rule: rule.name, arn: queue.queue.arn, retryPolicy: { ...RELAUNCH_TARGET_RETRY }, deadLetterConfig: { arn: queue.dlq.arn } },
    { parent },
  );
  const consumer = queue.consumer(
    `${name}-relaunch`,
    {
      entry: RELAUNCH_ENTRY,
      statements: relaunchStatements({ retrainingQueueArn: retrainingQueue.queue.arn, interruptionsDlqArn: queue.dlq.arn }),
      environment: functionEnvironment(
        RELAUNCH_ENV,
        { clusterArn: cluster.arn, retrainingQueueUrl: retrainingQueue.queue.url, quarantineQueueUrl: queue.dlq.url },
        { POWERTOOLS_METRICS_NAMESPACE: metricsNamespace("RetrainingPipeline"), POWERTOOLS_LOG_LEVEL: "INFO" },
      ),
      timeoutSeconds: RELAUNCH_QUEUE.consumerTimeoutSeconds,
      logRetentionDays: args.platform.logRetentionDays,
      tags,
    },
    { parent },
  );
  return { queue, rule, consumer };
}
