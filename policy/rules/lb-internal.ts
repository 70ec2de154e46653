import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isTrue } from "../lib/autoscaling";
import { LOAD_BALANCERS } from "../lib/types";

/**
 * The GPU fleet's load balancer is the consumers' way in, from inside the VPC only. `internal` is
 * Optional+Computed and AWS's default is internet-facing: an unset flag is a public address.
 */
export const lbInternal: ResourceValidationPolicy = {
  name: "lb-internal",
  description: "Every load balancer sets internal: true (AWS's default is internet-facing).",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (!LOAD_BALANCERS.includes(args.type)) args.notApplicable(`applies to ${LOAD_BALANCERS.join(" and ")}`);
    const props: Record<string, unknown> = args.props;
    if (!isTrue(props.internal)) {
      const given = props.internal === undefined ? "leaves internal unset (internet-facing)" : `sets internal to ${JSON.stringify(props.internal)}`;
      reportViolation(`Load balancer '${args.name}' ${given}: set internal: true, so only the VPC reaches the GPU service.`);
    }
  },
};
