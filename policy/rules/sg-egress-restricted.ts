import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord, readIfKnown, records, stringList } from "../lib/props";

interface Config {
  openPorts?: number[];
}

const SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup";
const EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule";
const SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule";
const ANYWHERE = ["0.0.0.0/0", "::/0"];

function problem(rule: Record<string, unknown>, openPorts: readonly number[]): string | undefined {
  const cidrs = [
    ...stringList(readIfKnown(() => rule.cidrBlocks)),
    ...stringList(readIfKnown(() => rule.ipv6CidrBlocks)),
    ...stringList(readIfKnown(() => rule.cidrIpv4)),
    ...stringList(readIfKnown(() => rule.cidrIpv6)),
  ];
  if (!cidrs.some((c) => ANYWHERE.includes(c))) return undefined;
  const protocol = String(readIfKnown(() => rule.protocol ?? rule.ipProtocol) ?? "");
  if (protocol === "-1" || protocol.toLowerCase() === "all") return "every protocol to anywhere";
  const from = Number(readIfKnown(() => rule.fromPort));
  const to = Number(readIfKnown(() => rule.toPort));
  if (!(from === to && openPorts.includes(from))) return `${protocol} ports ${from}-${to} to anywhere`;
  return undefined;
}

/**
 * A group's egress is what its members call: HTTPS to AWS APIs may go anywhere (no VPC endpoint
 * serves every API), anything else names its destination. All-protocol egress to 0.0.0.0/0 lets a
 * compromised function or task exfiltrate over any port.
 */
export const sgEgressRestricted: ResourceValidationPolicy = {
  name: "sg-egress-restricted",
  description: "Security-group egress to 0.0.0.0/0 or ::/0 is limited to single ports in openPorts (default 443); never all protocols or a port range.",
  enforcementLevel: "mandatory",
  configSchema: { properties: { openPorts: { type: "array", items: { type: "number" }, default: [443], description: "Ports that may be open to anywhere." } } },
  validateResource: (args, reportViolation) => {
    if (![SECURITY_GROUP, EGRESS_RULE, SG_RULE].includes(args.type)) args.notApplicable(`applies to ${SECURITY_GROUP}, ${EGRESS_RULE} and ${SG_RULE}`);
    const openPorts = (args.getConfig<Config>().openPorts ?? [443]).map(Number);
    const props: Record<string, unknown> = args.props;
    const rules = args.type === SECURITY_GROUP ? records(readIfKnown(() => props.egress)) : args.type === SG_RULE && props.type !== "egress" ? [] : [props];
    rules.forEach((r, i) => {
      const p = problem(r, openPorts);
      const what = isRecord(r) && typeof r.description === "string" ? ` (${r.description})` : "";
      if (p)
        reportViolation(
          `'${args.name}' egress[${i}]${what} allows ${p}: name the destination, or add the port to the stack's network.extraEgress with a narrower CIDR.`,
        );
    });
  },
};
