import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { dependsOnVia, depsOf, ofType, uniqueByUrn } from "../lib/graph";
import { readIfKnown, records, type Props } from "../lib/props";
import { LOAD_BALANCERS, SECURITY_GROUP, SG_INGRESS_RULE, SG_RULE } from "../lib/types";

const ANYWHERE = ["0.0.0.0/0", "::/0"];

/**
 * A list (or single-value) field of a rule: its elements, an element unknown on this preview shown
 * as "(unknown)" (it is still an address), or "unknown" when the field as a whole is.
 */
function field(rule: Props, key: string): string[] | "unknown" {
  const value = readIfKnown((): unknown => rule[key]);
  if (value === undefined) return key in rule ? "unknown" : [];
  if (value === null || value === "") return [];
  if (!Array.isArray(value)) return [String(value)];
  return Array.from({ length: value.length }, (_, i) => {
    const element = readIfKnown((): unknown => (value as unknown[])[i]);
    return typeof element === "string" ? element : "(unknown)";
  });
}

/** What a rule admits besides security groups: CIDR ranges and prefix lists, by the rule's own field names. */
function nonGroupSources(rule: Props, cidrKeys: readonly string[], prefixKeys: readonly string[]): string[] {
  const out: string[] = [];
  for (const key of [...cidrKeys, ...prefixKeys]) {
    const values = field(rule, key);
    if (values === "unknown") out.push(`${key} (unknown on this preview, so it cannot be verified)`);
    else if (values.length > 0) {
      const anywhere = values.some((v) => ANYWHERE.includes(v)) ? ", i.e. anywhere" : "";
      out.push(`${key} ${values.join(", ")}${anywhere}`);
    }
  }
  return out;
}

const INLINE = { cidr: ["cidrBlocks", "ipv6CidrBlocks"], prefix: ["prefixListIds"] } as const;
const VPC_RULE = { cidr: ["cidrIpv4", "cidrIpv6"], prefix: ["prefixListId"] } as const;

/**
 * The GPU fleet's load balancer answers the ingest consumers only: its security groups admit
 * other security groups (the consumers'), never an address range, which would let anything in
 * that range (or, for 0.0.0.0/0, anything that reaches the VPC) post work to the GPU.
 */
export const lbSgAdmitsConsumersOnly: StackValidationPolicy = {
  name: "lb-sg-admits-consumers-only",
  description:
    "Every load balancer declares security groups, each a SecurityGroup in this stack, whose ingress (inline, or standalone " +
    "SecurityGroupIngressRule / SecurityGroupRule resources) admits only other security groups: no cidrBlocks, ipv6CidrBlocks " +
    "or prefixListIds, so never 0.0.0.0/0.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    const judged = new Map<string, { sg: PolicyResource; lbs: string[] }>();
    for (const lb of args.resources.filter((r) => LOAD_BALANCERS.includes(r.type))) {
      const declared = readIfKnown((): unknown => lb.props.securityGroups);
      const count = Array.isArray(declared) ? declared.length : undefined;
      const edges = depsOf(lb, "securityGroups");
      const groups = uniqueByUrn(edges.filter((d) => d.type === SECURITY_GROUP));
      const others = uniqueByUrn(edges.filter((d) => d.type !== SECURITY_GROUP));
      if (edges.length === 0 && !count) {
        reportViolation(
          `Load balancer '${lb.name}' declares no security group: AWS would give it the VPC's default group. Declare one that admits the consumers' security groups only.`,
          lb.urn,
        );
        continue;
      }
      if (others.length > 0) {
        reportViolation(
          `Load balancer '${lb.name}' takes security groups from ${others.map((o) => `'${o.name}' (${o.type})`).join(", ")}, not SecurityGroups in this stack: what they admit cannot be verified.`,
          lb.urn,
        );
      }
      if (count !== undefined && count > groups.length + others.length) {
        reportViolation(
          `Load balancer '${lb.name}' names ${count - groups.length - others.length} security group(s) that are not SecurityGroups in this stack: what they admit cannot be verified.`,
          lb.urn,
        );
      }
      for (const sg of groups) {
        const entry = judged.get(sg.urn) ?? { sg, lbs: [] };
        entry.lbs.push(lb.name);
        judged.set(sg.urn, entry);
      }
    }

    for (const { sg, lbs } of judged.values()) {
      const of = `load balancer ${lbs.map((n) => `'${n}'`).join(", ")}`;
      records(readIfKnown((): unknown => sg.props.ingress)).forEach((rule, i) => {
        const sources = nonGroupSources(rule, INLINE.cidr, INLINE.prefix);
        if (sources.length > 0) {
          reportViolation(
            `Security group '${sg.name}' of ${of}: ingress[${i}] admits ${sources.join("; ")}. Admit the consumers' security groups only.`,
            sg.urn,
          );
        }
      });
      const standalone = [
        ...ofType(args.resources, SG_INGRESS_RULE).map((r) => ({ r, keys: VPC_RULE })),
        ...ofType(args.resources, SG_RULE)
          .filter((r) => readIfKnown(() => r.props.type) === "ingress")
          .map((r) => ({ r, keys: INLINE })),
      ].filter(({ r }) => dependsOnVia(r, "securityGroupId", sg));
      for (const { r, keys } of standalone) {
        const sources = nonGroupSources(r.props, keys.cidr, keys.prefix);
        if (sources.length > 0) {
          reportViolation(
            `Ingress rule '${r.name}' of security group '${sg.name}' (${of}) admits ${sources.join("; ")}. Admit the consumers' security groups only.`,
            r.urn,
          );
        }
      }
    }
  },
};
