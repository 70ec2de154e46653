/**
 * The EC2 events the Spot breaker counts, as EventBridge delivers them to the scaler's queue (the
 * program's rule, infra/parts/gpu.ts): a Spot Instance Interruption Warning (`detail.instance-id`,
 * `detail.instance-action`: terminate, stop or hibernate) and an Instance Rebalance Recommendation
 * (`detail.instance-id`). Both name only an instance, for every Spot instance of the account in the
 * region; the scaler keeps those of its group. Kept apart from the handler: the program builds the
 * rule's pattern from these names without loading the SDK clients.
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html
 */
import { z } from "zod";

export const SPOT_EVENT_SOURCE = "aws.ec2";
export const SPOT_INTERRUPTION_WARNING = "EC2 Spot Instance Interruption Warning";
export const REBALANCE_RECOMMENDATION = "EC2 Instance Rebalance Recommendation";

/** The rule's pattern: both detail types from EC2. Pure. */
export function spotSignalPattern(): Record<string, unknown> {
  return { source: [SPOT_EVENT_SOURCE], "detail-type": [SPOT_INTERRUPTION_WARNING, REBALANCE_RECOMMENDATION] };
}

export type SpotSignalKind = "interruption" | "rebalance";

export interface SpotSignal {
  kind: SpotSignalKind;
  instanceId: string;
  /** The event's own `time` (ISO 8601), as EventBridge stamped it. */
  time: string;
  /** The warning's `instance-action` (terminate, stop, hibernate). */
  action?: string;
}

const ec2Event = z.object({
  source: z.literal(SPOT_EVENT_SOURCE),
  "detail-type": z.enum([SPOT_INTERRUPTION_WARNING, REBALANCE_RECOMMENDATION]),
  time: z.iso.datetime({ offset: true }),
  detail: z.object({ "instance-id": z.string().regex(/^i-[0-9a-f]{8,17}$/), "instance-action": z.string().optional() }),
});

/**
 * What an SQS message on the scaler's queue is: a scheduled tick (anything not from EC2), one of the
 * two EC2 events, or an EC2 event that is not as documented (`malformed`, with why). Pure.
 */
export function spotSignalOf(body: string): { signal: SpotSignal } | { malformed: string } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null || (parsed as { source?: unknown }).source !== SPOT_EVENT_SOURCE) return undefined;
  const event = ec2Event.safeParse(parsed);
  if (!event.success) return { malformed: event.error.issues.map((i) => `${i.path.join(".") || "(event)"}: ${i.message}`).join("; ") };
  const { detail, time } = event.data;
  const action = detail["instance-action"];
  return {
    signal: {
      kind: event.data["detail-type"] === SPOT_INTERRUPTION_WARNING ? "interruption" : "rebalance",
      instanceId: detail["instance-id"],
      time,
      ...(action !== undefined ? { action } : {}),
    },
  };
}
