/**
 * A GOOD recording of the worker part's policy-relevant resources on top of the ingest fixture,
 * shaped like what the plan records for `QueueWorkerService`: a task definition marked as using
 * task scale-in protection, its task role (with ecs:UpdateTaskProtection) and execution role,
 * and the Fargate Spot service. `workerRecording()` returns a fresh copy each time. URNs use the
 * ingest fixture's parent type, as the other parts' fixtures do; the rules never read it.
 */
import type { RecordedResource } from "../../../policy/testing/types";
import { ingestRecording } from "./ingest";
import { ACCOUNT, REGION, T, add, ecsTasksTrust as ecsTrust, find, resource, role, roleArn, setInput, urnOf } from "./recording";

export const W = {
  taskRole: urnOf(T.role, "worker-task-role"),
  taskPolicy: urnOf(T.rolePolicy, "worker-task-policy"),
  executionRole: urnOf(T.role, "worker-execution-role"),
  executionPolicy: urnOf(T.rolePolicy, "worker-execution-policy"),
  logGroup: urnOf(T.logGroup, "worker-logs"),
  taskDefinition: urnOf(T.taskDefinition, "worker"),
  service: urnOf(T.service, "worker"),
} as const;

export function workerContainer(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "worker",
    image: `${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/worker-images@sha256:${"a".repeat(64)}`,
    essential: true,
    user: "1000:1000",
    privileged: false,
    readonlyRootFilesystem: true,
    linuxParameters: { initProcessEnabled: true, capabilities: { add: [], drop: ["ALL"] } },
    memory: 1024,
    stopTimeout: 120,
    mountPoints: [{ sourceVolume: "scratch", containerPath: "/scratch", readOnly: false }],
    environment: [
      { name: "ENCACHE_TASK_PROTECTION", value: "agent-endpoint" },
      { name: "WORK_QUEUE_URL", value: `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/worker` },
    ],
    logConfiguration: { logDriver: "awslogs", options: { "awslogs-group": "worker-logs", "awslogs-region": REGION, "awslogs-stream-prefix": "worker" } },
    ...overrides,
  };
}

export function workerRecording(): RecordedResource[] {
  const rs = ingestRecording();
  add(
    rs,
    role("worker-task-role", { assumeRolePolicy: ecsTrust }, { state: { arn: roleArn("worker-task-role") } }),
    resource(
      T.rolePolicy,
      "worker-task-policy",
      {
        role: "worker-task-role",
        policy: {
          Version: "2012-10-17",
          Statement: [
            {
              Sid: "WorkQueue",
              Effect: "Allow",
              Action: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"],
              Resource: `arn:aws:sqs:${REGION}:${ACCOUNT}:worker`,
            },
            { Sid: "QuarantineToDlq", Effect: "Allow", Action: ["sqs:SendMessage"], Resource: `arn:aws:sqs:${REGION}:${ACCOUNT}:worker-dlq` },
            {
              Sid: "OwnTaskScaleInProtection",
              Effect: "Allow",
              Action: ["ecs:UpdateTaskProtection", "ecs:GetTaskProtection"],
              Resource: `arn:aws:ecs:${REGION}:${ACCOUNT}:task/platform/*`,
            },
          ],
        },
      },
      { deps: { role: [W.taskRole] } },
    ),
    role("worker-execution-role", { assumeRolePolicy: ecsTrust }, { state: { arn: roleArn("worker-execution-role") } }),
    resource(T.logGroup, "worker-logs", { retentionInDays: 7 }),
    resource(
      T.taskDefinition,
      "worker",
      {
        family: "worker",
        requiresCompatibilities: ["FARGATE"],
        networkMode: "awsvpc",
        cpu: "512",
        memory: "1024",
        taskRoleArn: roleArn("worker-task-role"),
        executionRoleArn: roleArn("worker-execution-role"),
        volumes: [{ name: "scratch" }],
        containerDefinitions: JSON.stringify([workerContainer()]),
        tags: { "encache:part": "worker", "encache:task-protection": "agent-endpoint" },
      },
      { deps: { taskRoleArn: [W.taskRole], executionRoleArn: [W.executionRole], containerDefinitions: [W.logGroup] } },
    ),
    resource(
      T.service,
      "worker",
      {
        desiredCount: 1,
        capacityProviderStrategies: [{ capacityProvider: "FARGATE_SPOT", base: 0, weight: 1 }],
        networkConfiguration: { subnets: ["subnet-a", "subnet-b"], securityGroups: ["sg-worker"], assignPublicIp: false },
        taskDefinition: `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/worker:1`,
      },
      { deps: { taskDefinition: [W.taskDefinition] } },
    ),
  );
  return rs;
}

/** Rewrites the worker container's definition (as the JSON string pulumi-aws takes). */
export function setContainer(rs: RecordedResource[], edit: (c: Record<string, unknown>) => void): void {
  const containers = JSON.parse(String(find(rs, W.taskDefinition).inputs.containerDefinitions)) as Record<string, unknown>[];
  edit(containers[0]!);
  setInput(rs, W.taskDefinition, "containerDefinitions", JSON.stringify(containers));
}
