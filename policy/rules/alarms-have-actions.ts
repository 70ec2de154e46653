import type { ResourceValidationPolicy } from "@pulumi/policy";
import { readIfKnown } from "../lib/props";
import { METRIC_ALARM } from "../lib/types";

/** An alarm that notifies nobody is a dashboard tile: the failure it watches for goes unnoticed. */
export const alarmsHaveActions: ResourceValidationPolicy = {
  name: "alarms-have-actions",
  description: "Every CloudWatch metric alarm has at least one alarm action (the stack's alert topic).",
  enforcementLevel: "advisory",
  validateResource: (args, reportViolation) => {
    if (args.type !== METRIC_ALARM) args.notApplicable(`applies to ${METRIC_ALARM}`);
    const props: Record<string, unknown> = args.props;
    // The list's length is known even while its topic ARNs are not.
    const actions = readIfKnown(() => props.alarmActions);
    const count = Array.isArray(actions) ? actions.length : 0;
    if (count === 0) reportViolation(`Alarm '${args.name}' has no alarm action: nobody is told when it fires. Notify the stack's alert topic.`);
  },
};
