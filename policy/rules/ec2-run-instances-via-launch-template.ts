import type { ResourceValidationPolicy } from "@pulumi/policy";
import { carriesIdentityPolicy, forEachIdentityStatement } from "../lib/documents";
import { actionPatternMatches } from "../lib/iam";
import { isRecord, knownElements, readIfKnown, stringList } from "../lib/props";
import { IAM_POLICY, ROLE, ROLE_POLICY } from "../lib/types";

const KEY = "ec2:launchtemplate";
const OPERATORS = ["ArnEquals", "ArnLike", "StringEquals", "StringLike"];

/** The ec2:LaunchTemplate values of a statement's condition: undefined when absent, `unknown` entries for outputs not yet known. */
function launchTemplateValues(condition: unknown): Array<string | "unknown"> | undefined {
  if (!isRecord(condition)) return undefined;
  let found: Array<string | "unknown"> | undefined;
  for (const op of OPERATORS) {
    const entries = condition[op];
    if (!isRecord(entries)) continue;
    for (const key of Object.keys(entries)) {
      if (key.toLowerCase() !== KEY) continue;
      const raw = readIfKnown(() => entries[key]);
      const list: unknown[] = Array.isArray(raw) ? raw : raw === undefined ? ["unknown"] : [raw];
      const values: Array<string | "unknown"> = [];
      // Index access, not map: iterating hands every element over, and an unknown one throws.
      for (let i = 0; i < list.length; i += 1) {
        const v = readIfKnown(() => list[i]);
        values.push(typeof v === "string" ? v : "unknown");
      }
      found = [...(found ?? []), ...values];
    }
  }
  return found;
}

/** A Resource that covers images by a pattern: `*`, every EC2 resource, or an image ARN with a wildcard. */
function coversImagesByPattern(resource: string): boolean {
  if (resource === "*" || /^arn:[^:]+:ec2:[^:]*:[^:]*:\*$/.test(resource)) return true;
  return /^arn:[^:]+:ec2:[^:]*:[^:]*:image\//.test(resource) && /[*?]/.test(resource);
}

/** True when the condition requires `ec2:IsLaunchTemplateResource` to be true (Bool, "true" or true). */
function requiresTemplateResource(condition: unknown): boolean {
  if (!isRecord(condition)) return false;
  const entries = readIfKnown(() => condition.Bool);
  if (!isRecord(entries)) return false;
  return Object.keys(entries).some(
    (key) => key.toLowerCase() === "ec2:islaunchtemplateresource" && knownElements(() => entries[key]).some((v) => v === true || v === "true"),
  );
}

/** A value that names any template: `*`, or every launch template of some account. */
const ANY_TEMPLATE = /^(\*|arn:[^:]+:ec2:[^:]*:[^:]*:launch-template\/\*)$/;

/**
 * What a role may launch is what a launch template says, not what the caller asks for: without an
 * ec2:LaunchTemplate condition, a RunInstances grant launches any AMI, instance type and user data
 * with whatever instance role the grant may pass.
 */
export const ec2RunInstancesViaLaunchTemplate: ResourceValidationPolicy = {
  name: "ec2-run-instances-via-launch-template",
  description:
    'Allow statements granting ec2:RunInstances carry an ec2:LaunchTemplate condition naming specific launch templates, and on images by a wildcard (or `*`) also Bool ec2:IsLaunchTemplateResource "true", so a request cannot override the template\'s AMI.',
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (!carriesIdentityPolicy(args.type, args.props)) {
      args.notApplicable(`applies to ${ROLE}, ${ROLE_POLICY}, ${IAM_POLICY} and their declared documents`);
    }
    forEachIdentityStatement(args.type, args.name, args.props, (s, label) => {
      if (s.Effect !== "Allow" || s.NotAction !== undefined) return;
      if (!stringList(s.Action).some((p) => actionPatternMatches(p, "ec2:RunInstances"))) return;
      const condition = readIfKnown(() => s.Condition);
      const values = launchTemplateValues(condition);
      // A template names one AMI, but a request may override it: on images by a wildcard, only
      // ec2:IsLaunchTemplateResource holds the launch to the template's image. An unknown element is
      // an output, a specific ARN.
      const images = knownElements(() => s.Resource).filter((r): r is string => typeof r === "string" && coversImagesByPattern(r));
      if (images.length > 0 && !requiresTemplateResource(condition)) {
        reportViolation(
          `${label} allows ec2:RunInstances on ${images.join(", ")} without Bool ec2:IsLaunchTemplateResource "true": a launch through the template could override its AMI.`,
        );
      }
      if (values === undefined) {
        reportViolation(`${label} allows ec2:RunInstances without an ec2:LaunchTemplate condition: the role could launch any image, type and user data.`);
      } else if (values.some((v) => v !== "unknown" && ANY_TEMPLATE.test(v))) {
        reportViolation(
          `${label} allows ec2:RunInstances from any launch template (${values.filter((v) => v !== "unknown" && ANY_TEMPLATE.test(v)).join(", ")}): name the templates.`,
        );
      }
    });
  },
};
