import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { groupLaunchTemplates } from "../lib/autoscaling";
import { depsOf, ofType, uniqueByUrn } from "../lib/graph";
import { isRecord, readIfKnown, records, type Props } from "../lib/props";
import { AUTOSCALING_GROUP, EC2_INSTANCE, FUNCTION, LOAD_BALANCERS, SECURITY_GROUP, SG_INGRESS_RULE, SG_RULE } from "../lib/types";

/**
 * The env vars that name a function's HTTP paths to the GPU service (functions/ingest/env.ts).
 * They are literals the program writes, so they are known on a first preview; only values built
 * from outputs (the load balancer's DNS name, the group's name) are not, and those are read as
 * present, never by value.
 */
const VAR = {
  port: "GPU_SERVICE_PORT",
  servicePath: "GPU_SERVICE_PATH",
  statusPath: "GPU_STATUS_PATH",
  fleetHost: "GPU_FLEET_SERVICE_HOST",
  instanceIdParam: "GPU_INSTANCE_ID_PARAM",
  nameTag: "GPU_NAME_TAG",
} as const;

const SSM_PARAMETER = "aws:ssm/parameter:Parameter";
const VPC = "aws:ec2/vpc:Vpc";
const SG_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule";
/** Where a launch template or an instance names its security groups. */
const TEMPLATE_SG_KEYS = ["networkInterfaces", "vpcSecurityGroupIds", "securityGroupNames"];
const INSTANCE_SG_KEYS = ["vpcSecurityGroupIds", "securityGroups"];
/** An element of a list that is unknown on this preview. */
const UNKNOWN = Symbol("unknown");
/** What a VPC's CIDR can be, when the VPC's own CIDR cannot be read (see vpcCidrs). */
const PRIVATE_RANGES = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"];

type Direction = "ingress" | "egress";

/** One security group rule, inline or standalone, in one shape. */
interface Rule {
  protocol: unknown;
  fromPort: unknown;
  toPort: unknown;
  /** Peer groups by id: a known id, or UNKNOWN (on a first preview). */
  groupIds: (string | typeof UNKNOWN)[];
  /** The SecurityGroups of this stack the rule's peer ids were built from (propertyDependencies). */
  groupDeps: PolicyResource[];
  /** True when groupDeps are this rule's peers alone (a standalone rule); false for an inline rule, whose edges are the whole list's. */
  exactDeps: boolean;
  cidrs: string[];
  self: boolean;
}

function list(value: unknown): (string | typeof UNKNOWN)[] {
  if (value === undefined || value === null || value === "") return [];
  if (!Array.isArray(value)) return [typeof value === "string" ? value : UNKNOWN];
  return Array.from({ length: value.length }, (_, i) => {
    const element = readIfKnown((): unknown => (value as unknown[])[i]);
    return typeof element === "string" ? element : UNKNOWN;
  });
}

const names = (rs: readonly PolicyResource[]) => rs.map((r) => `'${r.name}'`).join(", ");
const known = (values: (string | typeof UNKNOWN)[]): string[] => values.filter((v): v is string => v !== UNKNOWN);
const read = (props: Props, key: string): unknown => readIfKnown((): unknown => props[key]);

/** The rules of a group in one direction: its inline list (undefined when unknown as a whole) and the standalone resources on it. */
function rulesOf(resources: readonly PolicyResource[], sg: PolicyResource, direction: Direction): { inline: Rule[] | undefined; standalone: Rule[] } {
  const raw = readIfKnown((): unknown => sg.props[direction]);
  const inlineDeps = depsOf(sg, direction, SECURITY_GROUP);
  const inline =
    raw === undefined
      ? undefined
      : records(raw).map(
          (r): Rule => ({
            protocol: read(r, "protocol"),
            fromPort: read(r, "fromPort"),
            toPort: read(r, "toPort"),
            groupIds: list(read(r, "securityGroups")),
            groupDeps: inlineDeps,
            exactDeps: false,
            cidrs: known(list(read(r, "cidrBlocks"))),
            self: read(r, "self") === true || read(r, "self") === "true",
          }),
        );
  const onThis = (r: PolicyResource) => depsOf(r, "securityGroupId").some((d) => d.urn === sg.urn);
  const vpcRuleType = direction === "ingress" ? SG_INGRESS_RULE : SG_EGRESS_RULE;
  const standalone = [
    ...ofType(resources, vpcRuleType)
      .filter(onThis)
      .map(
        (r): Rule => ({
          protocol: read(r.props, "ipProtocol"),
          fromPort: read(r.props, "fromPort"),
          toPort: read(r.props, "toPort"),
          groupIds: list(read(r.props, "referencedSecurityGroupId")),
          groupDeps: depsOf(r, "referencedSecurityGroupId", SECURITY_GROUP),
          exactDeps: true,
          cidrs: known(list(read(r.props, "cidrIpv4"))),
          self: false,
        }),
      ),
    ...ofType(resources, SG_RULE)
      .filter((r) => onThis(r) && read(r.props, "type") === direction)
      .map(
        (r): Rule => ({
          protocol: read(r.props, "protocol"),
          fromPort: read(r.props, "fromPort"),
          toPort: read(r.props, "toPort"),
          groupIds: list(read(r.props, "sourceSecurityGroupId")),
          groupDeps: depsOf(r, "sourceSecurityGroupId", SECURITY_GROUP),
          exactDeps: true,
          cidrs: known(list(read(r.props, "cidrBlocks"))),
          self: read(r.props, "self") === true || read(r.props, "self") === "true",
        }),
      ),
  ];
  return { inline, standalone };
}

/** TCP on `port`: protocol tcp (or 6) with the port in range, or every protocol (-1). */
function coversPort(rule: Rule, port: number): boolean {
  const protocol = String(rule.protocol ?? "").toLowerCase();
  if (protocol === "-1" || protocol === "all") return true;
  if (protocol !== "tcp" && protocol !== "6") return false;
  const from = Number(rule.fromPort);
  const to = Number(rule.toPort);
  return Number.isFinite(from) && Number.isFinite(to) && from <= port && port <= to;
}

function parseCidr(cidr: string): { base: number; bits: number } | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr.trim());
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  const bits = Number(m[5]);
  if (octets.some((o) => o > 255) || bits > 32) return undefined;
  const address = octets.reduce((acc, o) => acc * 256 + o, 0);
  const size = 2 ** (32 - bits);
  return { base: address - (address % size), bits };
}

/** `outer` contains every address of `inner` (IPv4). */
export function cidrCovers(outer: string, inner: string): boolean {
  const o = parseCidr(outer);
  const i = parseCidr(inner);
  if (!o || !i || o.bits > i.bits) return false;
  const size = 2 ** (32 - o.bits);
  return i.base - (i.base % size) === o.base;
}

/**
 * The CIDRs of the VPC a group lives in: the `cidrBlock` of the VPC its `vpcId` came from, or of
 * that component's `aws.ec2.Vpc` child (awsx's Vpc, as the engine sees it). Empty when neither is
 * readable: the offline plan answers awsx's Vpc without its children.
 */
function vpcCidrs(resources: readonly PolicyResource[], sg: PolicyResource): string[] {
  const out: string[] = [];
  for (const vpc of depsOf(sg, "vpcId")) {
    const candidates = [vpc, ...resources.filter((r) => r.type === VPC && r.parent?.urn === vpc.urn)];
    for (const c of candidates) {
      const cidr = read(c.props, "cidrBlock");
      if (typeof cidr === "string" && parseCidr(cidr)) out.push(cidr);
    }
  }
  return [...new Set(out)];
}

/**
 * A CIDR that reaches every address of the VPC. When the VPC's CIDR cannot be read, a private range
 * (RFC 1918) or 0.0.0.0/0 is taken for it: the GPUs and the functions have private addresses only.
 */
function coversVpc(cidr: string, vpc: readonly string[]): boolean {
  if (vpc.length > 0) return vpc.every((v) => cidrCovers(cidr, v));
  return cidr === "0.0.0.0/0" || PRIVATE_RANGES.some((range) => cidrCovers(range, cidr));
}

interface Verdict {
  open: boolean;
  /** Why an unknown value kept this preview from deciding, when it did. */
  unsure: string[];
}

/**
 * Does `owner` (a security group) let `port` in from (ingress) or out to (egress) a member of one of
 * `peers`, by group reference, by `self`, or by a CIDR covering the VPC? A group reference is a
 * group id: unknown on a first preview, and known later only as a value the stack rule cannot
 * name (a group's id is not among its outputs, and the rules never parse ARNs). So it counts through
 * the propertyDependencies of the input it is in: for a standalone rule, its one peer; for an
 * inline list, the edges are the whole list's, so they count only when every inline rule that
 * names a group covers the port. A known id equal to a peer's readable `id` counts as well.
 */
function opens(resources: readonly PolicyResource[], owner: PolicyResource, direction: Direction, port: number, peers: readonly PolicyResource[]): Verdict {
  const { inline, standalone } = rulesOf(resources, owner, direction);
  const unsure: string[] = [];
  if (inline === undefined) unsure.push(`'${owner.name}' ${direction} is unknown on this preview`);
  const peerUrns = new Set(peers.map((p) => p.urn));
  const peerIds = new Set(peers.map((p) => read(p.props, "id")).filter((id): id is string => typeof id === "string"));
  const vpc = vpcCidrs(resources, owner);
  const inlineGroupRulesCoverPort = (inline ?? []).filter((r) => r.groupIds.length > 0).every((r) => coversPort(r, port));
  for (const rule of [...(inline ?? []), ...standalone]) {
    if (!coversPort(rule, port)) continue;
    if (rule.self && peerUrns.has(owner.urn)) return { open: true, unsure: [] };
    if (known(rule.groupIds).some((id) => peerIds.has(id))) return { open: true, unsure: [] };
    if (rule.groupIds.length > 0 && rule.groupDeps.some((d) => peerUrns.has(d.urn))) {
      if (rule.exactDeps || inlineGroupRulesCoverPort) return { open: true, unsure: [] };
      unsure.push(
        `'${owner.name}' names ${names(peers)} in its ${direction} list, whose group rules do not all cover port ${port}, so which rule names it cannot be told`,
      );
    }
    if (rule.cidrs.some((c) => coversVpc(c, vpc))) return { open: true, unsure: [] };
  }
  return { open: false, unsure };
}

/** What a function's code calls on the GPU service, and through which resources. */
interface Target {
  /** e.g. "POSTs windows to load balancer 'lb'". */
  path: string;
  groups: PolicyResource[];
}

function variablesOf(fn: PolicyResource): Props | undefined {
  const environment = readIfKnown((): unknown => fn.props.environment);
  if (!isRecord(environment)) return undefined;
  const variables = readIfKnown((): unknown => environment.variables);
  return isRecord(variables) ? variables : undefined;
}

const sgsOf = (r: PolicyResource, keys: readonly string[]) => uniqueByUrn(keys.flatMap((k) => depsOf(r, k, SECURITY_GROUP)));

/** The load balancers whose address flowed into the function's environment (GPU_FLEET_SERVICE_HOST). */
function loadBalancerTargets(fn: PolicyResource, verb: string): Target[] {
  return uniqueByUrn(depsOf(fn, "environment").filter((d) => LOAD_BALANCERS.includes(d.type))).map((lb) => ({
    path: `${verb} load balancer '${lb.name}'`,
    groups: sgsOf(lb, ["securityGroups"]),
  }));
}

/**
 * The GPU instances the function reaches directly, by private IP: each instance of an Auto Scaling
 * group whose name flowed into its environment (through the group's launch templates), or else the
 * instance whose id the parameter GPU_INSTANCE_ID_PARAM names holds, and the instances tagged
 * Name = GPU_NAME_TAG.
 */
function instanceTargets(resources: readonly PolicyResource[], fn: PolicyResource, variables: Props, verb: string): Target[] {
  const groups = uniqueByUrn(depsOf(fn, "environment", AUTOSCALING_GROUP));
  if (groups.length > 0) {
    return groups.flatMap((group) => {
      const templates = groupLaunchTemplates(group);
      if (templates.length === 0) return [{ path: `${verb} each instance of group '${group.name}' (no launch template of this stack)`, groups: [] }];
      return templates.map((lt) => ({
        path: `${verb} each instance of group '${group.name}' (launch template '${lt.name}')`,
        groups: sgsOf(lt, TEMPLATE_SG_KEYS),
      }));
    });
  }
  const parameter = read(variables, VAR.instanceIdParam);
  const nameTag = read(variables, VAR.nameTag);
  const byParameter =
    typeof parameter === "string"
      ? ofType(resources, SSM_PARAMETER)
          .filter((p) => read(p.props, "name") === parameter)
          .flatMap((p) => depsOf(p, "value", EC2_INSTANCE))
      : [];
  const byTag =
    typeof nameTag === "string"
      ? ofType(resources, EC2_INSTANCE).filter((i) => {
          const tags = read(i.props, "tags");
          return isRecord(tags) && readIfKnown(() => tags.Name) === nameTag;
        })
      : [];
  return uniqueByUrn([...byParameter, ...byTag]).map((instance) => ({
    path: `${verb} instance '${instance.name}'`,
    groups: sgsOf(instance, INSTANCE_SG_KEYS),
  }));
}

/**
 * A function that calls the GPU service must be able to reach it: a security group that does not
 * admit the caller drops its packets, and the call only times out, at runtime (issue 35: the
 * scaler GET each instance's status from the consumers' group, which the GPUs did not admit).
 */
export const gpuPathsAdmitted: StackValidationPolicy = {
  name: "gpu-paths-admitted",
  description:
    "Every HTTP path a Lambda function's code takes to the GPU service (environment GPU_SERVICE_PORT) is open: the window " +
    "and DLQ consumers POST to the load balancer (GPU_FLEET_SERVICE_HOST set) or to the instance, and the scaler and idle check " +
    "(GPU_STATUS_PATH) GET each instance's status; the target's security groups admit the port from one of the function's " +
    "vpcConfig groups (or a CIDR covering the VPC), and the function's groups allow it out to them (or to such a CIDR).",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const fn of ofType(args.resources, FUNCTION)) {
      const variables = variablesOf(fn);
      if (!variables || !(VAR.port in variables)) continue;
      const portValue = read(variables, VAR.port);
      const port = Number(portValue);
      if (portValue === undefined || !Number.isInteger(port)) {
        reportViolation(
          `Function '${fn.name}' calls the GPU service on ${VAR.port}=${String(portValue ?? "(unknown)")}, not a port number: its paths cannot be verified.`,
          fn.urn,
        );
        continue;
      }
      const targets: Target[] = [];
      const posts = VAR.servicePath in variables || !(VAR.statusPath in variables);
      if (posts) {
        const fleet = VAR.fleetHost in variables;
        const found = fleet ? loadBalancerTargets(fn, "POSTs to") : instanceTargets(args.resources, fn, variables, "POSTs to");
        if (found.length === 0) {
          const how = fleet
            ? `${VAR.fleetHost} is not derived from a load balancer of this stack`
            : `no GPU instance of this stack is found from ${VAR.instanceIdParam} or ${VAR.nameTag}`;
          reportViolation(`Function '${fn.name}' POSTs to the GPU service, but ${how}: the path cannot be verified.`, fn.urn);
        }
        targets.push(...found);
      }
      if (VAR.statusPath in variables) {
        const found = instanceTargets(args.resources, fn, variables, "GETs the status of");
        if (found.length === 0) {
          reportViolation(
            `Function '${fn.name}' GETs each GPU instance's status (${VAR.statusPath}), but no Auto Scaling group or GPU instance of this stack is found from its environment: the path cannot be verified.`,
            fn.urn,
          );
        }
        targets.push(...found);
      }
      if (targets.length === 0) continue;

      const own = uniqueByUrn(depsOf(fn, "vpcConfig", SECURITY_GROUP));
      if (own.length === 0) {
        reportViolation(
          `Function '${fn.name}' calls the GPU service on port ${port}, but its vpcConfig names no SecurityGroup of this stack: it cannot reach the GPU's private address, or what its groups allow cannot be verified.`,
          fn.urn,
        );
        continue;
      }
      for (const target of targets) {
        if (target.groups.length === 0) {
          reportViolation(`Function '${fn.name}' ${target.path}, which declares no SecurityGroup of this stack: what it admits cannot be verified.`, fn.urn);
          continue;
        }
        const ingress = target.groups.map((g) => opens(args.resources, g, "ingress", port, own));
        if (!ingress.some((v) => v.open)) {
          const unsure = ingress.flatMap((v) => v.unsure);
          reportViolation(
            `Function '${fn.name}' ${target.path} on port ${port}, but no ingress rule of ${names(target.groups)} admits port ${port} ` +
              `from its security group(s) ${names(own)} or from a CIDR covering the VPC: every request times out.` +
              `${unsure.length > 0 ? ` (${unsure.join("; ")}.)` : ""} Admit port ${port} from ${names(own)}.`,
            fn.urn,
          );
        }
        const egress = own.map((g) => opens(args.resources, g, "egress", port, target.groups));
        if (!egress.some((v) => v.open)) {
          const unsure = egress.flatMap((v) => v.unsure);
          reportViolation(
            `Function '${fn.name}' ${target.path} on port ${port}, but its security group(s) ${names(own)} allow no egress on port ${port} ` +
              `to ${names(target.groups)} or to a CIDR covering the VPC.${unsure.length > 0 ? ` (${unsure.join("; ")}.)` : ""}`,
            fn.urn,
          );
        }
      }
    }
  },
};
