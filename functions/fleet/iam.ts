import { calledActions, type Grant } from "../shared/grants";

/**
 * The IAM grants each fleet handler's code needs, declared once, beside that code; the program
 * binds each symbolic resource (`infra/parts/fleet.ts`). Kept apart from the entry modules, because
 * importing those parses the environment.
 */
export type FleetResource =
  | "job-items" // RUNS_FLEET_JOBS_TABLE's job items only, never a sweep cursor (a dynamodb:LeadingKeys condition)
  | "jobs-table-indexes" // its GSIs (Query)
  | "sweep-cursors" // the jobs table's `housekeeping-cursor#<task>` items only (a dynamodb:LeadingKeys condition)
  | "runner-parameters" // <runner parameter path>/* : each runner's config parameters
  | "runner-path" // the path itself: GetParametersByPath is authorised on it, and Recursive lists below it
  | "managed-instances" // instances carrying the managed tag, by condition
  | "*" // EC2 DescribeInstances supports no resource-level permissions
  | "termination-dlq" // RUNS_FLEET_TERMINATION_DLQ_URL (quarantine)
  | "housekeeping-dlq"; // RUNS_FLEET_HOUSEKEEPING_DLQ_URL (quarantine)

/** The termination consumer: complete the job, delete the runner's config, quarantine. */
export const TERMINATION_GRANTS = [
  { sid: "CompleteJob", actions: ["dynamodb:UpdateItem"], resource: "job-items" },
  { sid: "DeleteRunnerConfig", actions: ["ssm:DeleteParameter"], resource: "runner-parameters" },
  { sid: "QuarantineMalformed", actions: ["sqs:SendMessage"], resource: "termination-dlq" },
] as const satisfies readonly Grant<FleetResource>[];

/** The housekeeping consumer: the four tasks' calls, and quarantine. */
export const HOUSEKEEPING_GRANTS = [
  { sid: "DescribeInstances", actions: ["ec2:DescribeInstances"], resource: "*" },
  // The condition, not the ARN, scopes it: fleet instances come and go, the tag makes one the fleet's.
  { sid: "TerminateManagedInstances", actions: ["ec2:TerminateInstances"], resource: "managed-instances" },
  { sid: "ListRunnerParameters", actions: ["ssm:GetParametersByPath"], resource: "runner-path" },
  { sid: "DeleteStaleRunnerParameters", actions: ["ssm:DeleteParameters"], resource: "runner-parameters" },
  { sid: "QueryJobIndexes", actions: ["dynamodb:Query"], resource: "jobs-table-indexes" },
  // Job items only: a sweep's cursor is not one of the old jobs, and not for this write to reach.
  { sid: "DeleteOldJobs", actions: ["dynamodb:BatchWriteItem"], resource: "job-items" },
  // Where each budgeted sweep resumes (functions/fleet/tasks/cursor.ts): those items, no job's.
  { sid: "SweepCursors", actions: ["dynamodb:GetItem", "dynamodb:PutItem"], resource: "sweep-cursors" },
  { sid: "QuarantineMalformed", actions: ["sqs:SendMessage"], resource: "housekeeping-dlq" },
] as const satisfies readonly Grant<FleetResource>[];

export const TERMINATION_IAM_ACTIONS: readonly string[] = calledActions(TERMINATION_GRANTS);
export const HOUSEKEEPING_IAM_ACTIONS: readonly string[] = calledActions(HOUSEKEEPING_GRANTS);
