import type { ResourceValidationPolicy } from "@pulumi/policy";
import { actionPatternMatches } from "../lib/iam";
import { isRecord, readIfKnown, stringList } from "../lib/props";
import { IAM_POLICY, ROLE, ROLE_POLICY } from "../lib/types";
import { carriesIdentityPolicy, identityDocuments } from "../lib/documents";

/** The actions that put an instance in a running state: who may call them decides what runs and is billed. */
export const LAUNCH_ACTIONS = ["ec2:RunInstances", "ec2:StartInstances"];

/** Condition keys that tie a grant to tags. */
const TAG_CONDITION_KEY = /^(aws:ResourceTag\/|aws:RequestTag\/|ec2:ResourceTag\/)/i;
/** `*`, or an EC2 ARN that names every instance (or everything) in some account/region. */
const BROAD_RESOURCE = /^(\*|arn:[^:]+:ec2:[^:]*:[^:]*:(\*|instance\/\*))$/;

interface GrantStatement {
  sid?: string;
  actions: string[];
  notAction: boolean;
  hasTagCondition: boolean;
  /** Resources whose value is known; unknown ones are outputs of declared resources, i.e. specific ARNs. */
  knownResources: string[];
}

function parseDocument(doc: unknown): unknown {
  if (typeof doc !== "string") return doc;
  try {
    return JSON.parse(doc);
  } catch {
    return undefined;
  }
}

/** Allow statements of one policy document, with what this rule needs from Condition and Resource. */
export function allowStatements(doc: unknown): GrantStatement[] {
  const parsed = parseDocument(doc);
  if (!isRecord(parsed)) return [];
  const raw: unknown = parsed.Statement;
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  const out: GrantStatement[] = [];
  for (const s of list) {
    if (!isRecord(s) || s.Effect !== "Allow") continue;
    const condition = readIfKnown(() => s.Condition);
    const keys = isRecord(condition) ? Object.values(condition).flatMap((byKey) => (isRecord(byKey) ? Object.keys(byKey) : [])) : [];
    const resource = readIfKnown(() => s.Resource);
    const entries: unknown[] = Array.isArray(resource) ? resource : resource === undefined ? [] : [resource];
    const knownResources: string[] = [];
    // Index access, not forEach: iterating hands every element over, and an unknown one throws.
    for (let i = 0; i < entries.length; i += 1) {
      const v = readIfKnown(() => entries[i]);
      if (typeof v === "string") knownResources.push(v);
    }
    out.push({
      sid: typeof s.Sid === "string" ? s.Sid : undefined,
      actions: stringList(s.NotAction ?? s.Action),
      notAction: s.NotAction !== undefined,
      hasTagCondition: keys.some((k) => TAG_CONDITION_KEY.test(k)),
      knownResources,
    });
  }
  return out;
}

function grantsLaunch(s: GrantStatement): string[] {
  return LAUNCH_ACTIONS.filter((a) => {
    const matched = s.actions.some((p) => actionPatternMatches(p, a));
    return s.notAction ? !matched : matched;
  });
}

/** Why the statement's launch grant is unscoped, or null when it carries a tag condition or names specific resources. */
export function unscopedLaunchGrant(s: GrantStatement): string | null {
  const actions = grantsLaunch(s);
  if (actions.length === 0 || s.hasTagCondition) return null;
  const broad = s.knownResources.filter((r) => BROAD_RESOURCE.test(r));
  if (broad.length === 0) return null;
  return `${actions.join(", ")} on ${broad.join(", ")} without a tag condition`;
}

/**
 * An EC2 RunInstances/StartInstances grant carries a tag condition (aws:ResourceTag/…,
 * aws:RequestTag/…, ec2:ResourceTag/…) or names specific resources. Without either, the role
 * can start or launch any instance in the account.
 */
export const ec2LaunchGrantsScoped: ResourceValidationPolicy = {
  name: "ec2-launch-grants-scoped",
  description:
    "Allow statements granting ec2:RunInstances or ec2:StartInstances carry a tag condition or name specific resources " + "(not `*` or every instance).",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (!carriesIdentityPolicy(args.type, args.props)) {
      args.notApplicable(`applies to ${ROLE}, ${ROLE_POLICY}, ${IAM_POLICY} and their declared documents`);
    }
    const props: Record<string, unknown> = args.props;
    for (const { doc } of identityDocuments(args.type, args.name, props)) {
      for (const s of allowStatements(doc)) {
        const problem = unscopedLaunchGrant(s);
        if (problem)
          reportViolation(`'${args.name}'${s.sid ? ` statement ${s.sid}` : ""} grants ${problem}; condition it on the instances' tags or name them.`);
      }
    }
  },
};
