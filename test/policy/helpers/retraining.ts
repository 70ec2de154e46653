/**
 * A GOOD recording of the retraining part's policy-relevant resources on top of the ingest
 * fixture: the launcher's role policy (PassRole scoped to the task roles, for ECS tasks), the
 * state table, a schedule with retry + DLQ, plus the two generic ECS shapes the ECS rules also
 * judge for part 4: a capacity-provider service in private subnets and a Scheduler ECS target.
 */
import type { RecordedResource } from "../../../policy/testing/types";
import { ingestRecording } from "./ingest";
import { ACCOUNT, T, add, ecsTasksTrust, resource, roleArn, urnOf } from "./recording";

export const R = {
  launcherPolicy: urnOf(T.rolePolicy, "retraining-launcher-policy"),
  taskRole: urnOf(T.role, "retraining-strategy-task"),
  executionRole: urnOf(T.role, "retraining-strategy-execution"),
  table: urnOf(T.table, "retraining-state"),
  service: urnOf(T.service, "worker-service"),
  ecsSchedule: urnOf(T.schedule, "strategy-direct"),
  eventTarget: urnOf(T.eventTarget, "strategy-on-event"),
} as const;
const network = { subnets: ["subnet-a"], securityGroups: ["sg-1"], assignPublicIp: false };
const strategies = [{ capacityProvider: "FARGATE_SPOT", weight: 1 }];

export function retrainingRecording(): RecordedResource[] {
  const rs = ingestRecording();
  add(
    rs,
    resource(T.role, "retraining-strategy-task", { assumeRolePolicy: ecsTasksTrust }),
    resource(T.role, "retraining-strategy-execution", { assumeRolePolicy: ecsTasksTrust }),
    resource(
      T.rolePolicy,
      "retraining-launcher-policy",
      {
        policy: {
          Version: "2012-10-17",
          Statement: [
            {
              Sid: "RunStrategyTask",
              Effect: "Allow",
              Action: ["ecs:RunTask"],
              Resource: `arn:aws:ecs:eu-west-1:${ACCOUNT}:task-definition/tradai-strategy-generic-dev:*`,
            },
            {
              Sid: "PassStrategyTaskRoles",
              Effect: "Allow",
              Action: ["iam:PassRole"],
              Resource: [roleArn("retraining-strategy-task-1"), roleArn("retraining-strategy-execution-1")],
              Condition: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
            },
          ],
        },
      },
      { deps: { policy: [R.taskRole, R.executionRole] } },
    ),
    resource(T.table, "retraining-state", {
      hashKey: "model_name",
      attributes: [{ name: "model_name", type: "S" }],
      billingMode: "PAY_PER_REQUEST",
      pointInTimeRecovery: { enabled: true },
      serverSideEncryption: { enabled: true },
      deletionProtectionEnabled: true,
    }),
    resource(T.service, "worker-service", { desiredCount: 1, capacityProviderStrategies: strategies, networkConfiguration: network }),
    resource(T.schedule, "strategy-direct", {
      scheduleExpression: "rate(1 day)",
      flexibleTimeWindow: { mode: "OFF" },
      target: {
        arn: `arn:aws:ecs:eu-west-1:${ACCOUNT}:cluster/platform`,
        roleArn: roleArn("scheduler"),
        retryPolicy: { maximumRetryAttempts: 3, maximumEventAgeInSeconds: 3600 },
        deadLetterConfig: { arn: `arn:aws:sqs:eu-west-1:${ACCOUNT}:schedule-dlq` },
        ecsParameters: { taskDefinitionArn: "td", capacityProviderStrategies: strategies, networkConfiguration: network },
      },
    }),
    resource(T.eventTarget, "strategy-on-event", {
      rule: "r",
      arn: `arn:aws:ecs:eu-west-1:${ACCOUNT}:cluster/platform`,
      retryPolicy: { maximumRetryAttempts: 3, maximumEventAgeInSeconds: 3600 },
      deadLetterConfig: { arn: `arn:aws:sqs:eu-west-1:${ACCOUNT}:schedule-dlq` },
      ecsTarget: { taskDefinitionArn: "td", capacityProviderStrategies: strategies, networkConfiguration: network },
    }),
  );
  return rs;
}
