import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { assumedBy, trustScope } from "../iam/document";
import { declaredPolicy, ROLE_POLICY_TYPE } from "../iam/declared";
import { scheduleExpressionProblem, scheduleTimezoneProblem } from "../aws-rules";

export interface QueueScheduleArgs {
  /** ARN of the SQS queue the schedule sends to. */
  queueArn: pulumi.Input<string>;
  /** `rate(5 minutes)`, `cron(0 3 * * ? *)` or `at(2026-01-01T00:00:00)`. */
  scheduleExpression: string;
  /**
   * The message body, as data. Scheduler context attributes such as
   * `<aws.scheduler.scheduled-time>` are substituted at send time.
   */
  message: Record<string, unknown>;
  /** Dead-letter queue for sends that still fail after the retries (a `TerminalQueue` with role `dlq`). */
  deadLetterQueueArn: pulumi.Input<string>;
  /**
   * Retries of a failed send.
   * @default 3
   */
  maximumRetryAttempts?: number;
  /**
   * How long a failed send keeps being retried, in seconds (60–86400).
   * @default 3600
   */
  maximumEventAgeSeconds?: number;
  /**
   * Time zone of a cron expression: a canonical IANA name, at most 50 characters.
   * @default "UTC"
   */
  timezone?: string;
  /**
   * What the schedule is for.
   * @default ""
   */
  description?: string;
  /**
   * Tags for the role (Scheduler schedules take no tags).
   * @default {}
   */
  tags?: Record<string, string>;
}

export const queueScheduleDefaults = { maximumRetryAttempts: 3, maximumEventAgeSeconds: 3600, timezone: "UTC" } as const;

/** Fills defaults and checks what Scheduler would refuse. Pure. */
export function resolveQueueScheduleArgs(args: Pick<QueueScheduleArgs, "scheduleExpression" | "maximumRetryAttempts" | "maximumEventAgeSeconds" | "timezone">) {
  const r = {
    ...queueScheduleDefaults,
    ...Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)),
  } as typeof queueScheduleDefaults & { scheduleExpression: string };
  const errors: string[] = [];
  const problem = scheduleExpressionProblem(r.scheduleExpression);
  if (problem) errors.push(`scheduleExpression "${r.scheduleExpression}": ${problem}`);
  const zone = scheduleTimezoneProblem(r.timezone);
  if (zone) errors.push(`timezone: ${zone}`);
  if (!Number.isInteger(r.maximumRetryAttempts) || r.maximumRetryAttempts < 0 || r.maximumRetryAttempts > 185)
    errors.push("maximumRetryAttempts must be 0..185");
  if (!Number.isInteger(r.maximumEventAgeSeconds) || r.maximumEventAgeSeconds < 60 || r.maximumEventAgeSeconds > 86_400)
    errors.push("maximumEventAgeSeconds must be 60..86400");
  if (errors.length > 0) throw new Error(`QueueSchedule: ${errors.join("; ")}`);
  return r;
}

/** Pulumi auto-names a resource `<logical name>-<7 hex>`: 8 characters more than its logical name. */
const AUTO_NAME_SUFFIX = 8;
/** IAM role names and Scheduler schedule names are both at most 64 characters. */
const NAME_LIMIT = 64;

/** Why the schedule's or its role's physical name would exceed AWS's 64 characters, or undefined. Pure. */
export function autoNamesOverLimit(name: string): string | undefined {
  const longest = `${name}-role`;
  const length = longest.length + AUTO_NAME_SUFFIX;
  return length > NAME_LIMIT ? `the role's name ${longest}-xxxxxxx would be ${length} characters; IAM and Scheduler allow ${NAME_LIMIT}` : undefined;
}

/**
 * An EventBridge Scheduler schedule that sends a fixed message to an SQS queue, with a retry
 * policy and a dead-letter queue, under a role that may send to exactly those two queues.
 * (A scheduled Lambda is a queue consumer fed by one of these: the queue gives it retries,
 * partial failures and a DLQ like any other message.)
 */
export class QueueSchedule extends pulumi.ComponentResource {
  readonly schedule: aws.scheduler.Schedule;
  readonly role: aws.iam.Role;

  constructor(name: string, args: QueueScheduleArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:scheduling:QueueSchedule", name, {}, opts);
    const r = resolveQueueScheduleArgs(args);
    const tooLong = autoNamesOverLimit(name);
    if (tooLong) throw new Error(`QueueSchedule ${name}: ${tooLong}`);
    const tags = args.tags ?? {};

    this.role = this.declareRole(name, tags);
    const policy = this.declareSendPolicy(name, args);
    this.schedule = this.declareSchedule(name, args, r, policy);
    this.registerOutputs({ scheduleArn: this.schedule.arn });
  }

  /** `<name>-role`: assumed by EventBridge Scheduler, for this account's schedules only. */
  private declareRole(name: string, tags: Record<string, string>): aws.iam.Role {
    return new aws.iam.Role(`${name}-role`, { assumeRolePolicy: assumedBy("scheduler.amazonaws.com", trustScope(this)), tags }, { parent: this });
  }

  /** `<name>-policy`: send to the target queue and the DLQ (Scheduler sends to the DLQ with the schedule's own role). */
  private declareSendPolicy(name: string, args: QueueScheduleArgs): aws.iam.RolePolicy {
    return new aws.iam.RolePolicy(
      `${name}-policy`,
      {
        role: this.role.id,
        policy: declaredPolicy(
          [{ Sid: "SendToTargetAndDlq", Effect: "Allow", Action: ["sqs:SendMessage"], Resource: [args.queueArn, args.deadLetterQueueArn] }],
          {
            resource: `${name}-policy`,
            resourceType: ROLE_POLICY_TYPE,
            parent: this,
          },
        ),
      },
      { parent: this },
    );
  }

  /** `<name>`: the schedule, sending its message to the queue, failed deliveries to the DLQ. */
  private declareSchedule(
    name: string,
    args: QueueScheduleArgs,
    r: ReturnType<typeof resolveQueueScheduleArgs>,
    policy: aws.iam.RolePolicy,
  ): aws.scheduler.Schedule {
    return new aws.scheduler.Schedule(
      name,
      {
        description: args.description ?? "",
        scheduleExpression: r.scheduleExpression,
        scheduleExpressionTimezone: r.timezone,
        flexibleTimeWindow: { mode: "OFF" },
        target: {
          arn: args.queueArn,
          roleArn: this.role.arn,
          input: JSON.stringify(args.message),
          retryPolicy: { maximumRetryAttempts: r.maximumRetryAttempts, maximumEventAgeInSeconds: r.maximumEventAgeSeconds },
          deadLetterConfig: { arn: args.deadLetterQueueArn },
        },
      },
      { parent: this, dependsOn: [policy] },
    );
  }
}
