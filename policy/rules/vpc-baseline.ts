import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { dependsOnVia, ofType } from "../lib/graph";
import { readIfKnown, records } from "../lib/props";

const VPCS = ["aws:ec2/vpc:Vpc", "awsx:ec2:Vpc"];
const FLOW_LOG = "aws:ec2/flowLog:FlowLog";
const DEFAULT_SG = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup";

const vpcsOf = (resources: readonly PolicyResource[]) => resources.filter((r) => VPCS.includes(r.type));

/** Who talked to what, accepted or rejected: without it an incident has no network record. */
export const vpcFlowLogs: StackValidationPolicy = {
  name: "vpc-flow-logs",
  description: "Every VPC has a flow log of ALL traffic (accepted and rejected).",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const vpc of vpcsOf(args.resources)) {
      const logs = ofType(args.resources, FLOW_LOG).filter((f) => dependsOnVia(f, "vpcId", vpc));
      if (logs.length === 0) reportViolation(`VPC '${vpc.name}' has no flow log: add an aws.ec2.FlowLog of trafficType ALL.`, vpc.urn);
      else if (!logs.some((f) => readIfKnown(() => f.props.trafficType) === "ALL"))
        reportViolation(`VPC '${vpc.name}' logs only some traffic: set trafficType ALL.`, vpc.urn);
    }
  },
};

/** A resource that falls into the default group by mistake must not be able to talk. */
export const vpcDefaultSgClosed: StackValidationPolicy = {
  name: "vpc-default-sg-closed",
  description: "Every VPC's default security group is managed (aws.ec2.DefaultSecurityGroup) with no ingress and no egress rules.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const vpc of vpcsOf(args.resources)) {
      const groups = ofType(args.resources, DEFAULT_SG).filter((g) => dependsOnVia(g, "vpcId", vpc));
      if (groups.length === 0) {
        reportViolation(
          `VPC '${vpc.name}': its default security group keeps AWS's rules (all traffic within the group, all egress); manage it with no rules.`,
          vpc.urn,
        );
        continue;
      }
      for (const g of groups) {
        const open = [...records(readIfKnown(() => g.props.ingress)), ...records(readIfKnown(() => g.props.egress))];
        if (open.length > 0) reportViolation(`Default security group '${g.name}' has ${open.length} rule(s): it must have none.`, g.urn);
      }
    }
  },
};
