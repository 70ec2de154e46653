import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord } from "../lib/props";
import { EVENT_TARGET, SCHEDULE } from "../lib/types";

/**
 * A scheduled send that fails silently is a job that never runs: every EventBridge Scheduler
 * schedule and every EventBridge rule target retries and then parks the event in a DLQ.
 * Only the presence of the DLQ block is read: its ARN is unknown on a first preview.
 */
export const scheduledTargetRetryAndDlq: ResourceValidationPolicy = {
  name: "scheduled-target-retry-and-dlq",
  description:
    "EventBridge Scheduler schedules (target.retryPolicy, target.deadLetterConfig) and EventBridge rule targets " +
    "(retryPolicy, deadLetterConfig) set a retry policy and a dead-letter queue.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    let holder: Record<string, unknown>;
    if (args.type === SCHEDULE) {
      const target: unknown = args.props.target;
      if (!isRecord(target)) {
        reportViolation(`Schedule '${args.name}' has no target.`);
        return;
      }
      // Not a spread: that would read target.arn, unknown on a first preview, which this rule never needs.
      holder = target;
    } else if (args.type === EVENT_TARGET) {
      holder = args.props;
    } else {
      return args.notApplicable(`applies to ${SCHEDULE} and ${EVENT_TARGET}`);
    }
    const what = args.type === SCHEDULE ? `Schedule '${args.name}'` : `Event target '${args.name}'`;
    const retry = holder.retryPolicy;
    if (!isRecord(retry) || (retry.maximumRetryAttempts === undefined && retry.maximumEventAgeInSeconds === undefined)) {
      reportViolation(`${what} has no retry policy: set retryPolicy.maximumRetryAttempts and maximumEventAgeInSeconds.`);
    }
    if (!isRecord(holder.deadLetterConfig)) {
      reportViolation(`${what} has no dead-letter queue: set deadLetterConfig.arn to an SQS queue.`);
    }
  },
};
