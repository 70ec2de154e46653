import type { ResourceValidationPolicy } from "@pulumi/policy";
import { QUEUE_ROLE_TAG, QUEUE_ROLES } from "../contract";
import { isUnknown } from "../lib/documents";
import { isRecord } from "../lib/props";
import { QUEUE } from "../lib/types";

/** The redrive policy a queue declares, as the program wrote it: absent, unknown (built from a DLQ's ARN on a first preview), or its text. */
function declaredRedrive(redrivePolicy: () => unknown): "absent" | "unknown" | "target" | "no-target" {
  if (isUnknown(redrivePolicy)) return "unknown";
  const raw = redrivePolicy();
  if (raw === undefined || raw === null || raw === "") return "absent";
  let parsed: unknown = raw;
  if (typeof raw === "string") {
    try {
      parsed = JSON.parse(raw);
    } catch {
      return "no-target";
    }
  }
  if (!isRecord(parsed)) return "no-target";
  if (isUnknown(() => parsed.deadLetterTargetArn)) return "unknown";
  return typeof parsed.deadLetterTargetArn === "string" && parsed.deadLetterTargetArn !== "" ? "target" : "no-target";
}

/**
 * Nothing is lost: every message is processed, retried or parked in a DLQ. A literal fact of the
 * queue's own inputs, so it is judged as a resource rule, on a first preview too: the queue's
 * `redrivePolicy` output is Optional+Computed (unknown on a first preview when left unset), its
 * input is what the program declares. Which queue is a DLQ is the graph's to say, and
 * `terminal-queue-unconsumed` holds the queues this rule lets through by their role tag.
 */
export const queueHasDlq: ResourceValidationPolicy = {
  name: "queue-has-dlq",
  description:
    `Every SQS queue declares a redrive policy to a dead-letter queue, unless tagged ${QUEUE_ROLE_TAG}=${QUEUE_ROLES.dlq} ` +
    `or =${QUEUE_ROLES.quarantine} (a DLQ or a terminal sink, which terminal-queue-unconsumed holds to that).`,
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== QUEUE) args.notApplicable(`applies to ${QUEUE}`);
    const tags: unknown = args.props.tags;
    const role = isRecord(tags) ? tags[QUEUE_ROLE_TAG] : undefined;
    if (role === QUEUE_ROLES.dlq || role === QUEUE_ROLES.quarantine) return;
    const redrive = declaredRedrive(() => args.props.redrivePolicy);
    if (redrive === "target" || redrive === "unknown") return;
    reportViolation(
      redrive === "absent"
        ? `Queue '${args.name}' has no redrive policy to a dead-letter queue; failed messages would be lost after the retention period ` +
            `(a DLQ or quarantine queue says so with ${QUEUE_ROLE_TAG}).`
        : `Queue '${args.name}' has a redrive policy without a deadLetterTargetArn.`,
    );
  },
};
