import type { StackValidationPolicy } from "@pulumi/policy";
import { dependsOnVia, ofType } from "../lib/graph";
import { isRecord, readIfKnown, stringList } from "../lib/props";
import { statementRecords } from "../lib/documents";
import { ROLE, ROLE_POLICY_ATTACHMENT } from "../lib/types";

interface Config {
  allowedPolicyArns?: string[];
}

const AWS_MANAGED = /^arn:aws[a-z-]*:iam::aws:policy\//;

function trustsEc2(role: { props: Record<string, unknown> }): boolean {
  const doc = readIfKnown(() => role.props.assumeRolePolicy);
  return statementRecords(doc).some((s) => s.Effect === "Allow" && isRecord(s.Principal) && stringList(s.Principal.Service).includes("ec2.amazonaws.com"));
}

/**
 * An instance role's credentials are readable by everything that runs on the instance. AWS's
 * managed policies are written for every customer: AmazonSSMManagedInstanceCore alone lets an
 * instance read every plain parameter of the account. Grant what the instance calls instead.
 */
export const instanceRoleNoManagedPolicies: StackValidationPolicy = {
  name: "instance-role-no-managed-policies",
  description: "A role EC2 instances assume attaches no AWS-managed policy (config allowedPolicyArns excepted); its grants are its own.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      allowedPolicyArns: { type: "array", items: { type: "string" }, default: [], description: "AWS-managed policies an instance role may attach anyway." },
    },
  },
  validateStack: (args, reportViolation) => {
    const allowed = stringList(args.getConfig<Config>().allowedPolicyArns);
    for (const role of ofType(args.resources, ROLE).filter(trustsEc2)) {
      // A Set: after a refresh managedPolicyArns lists the attachments read below too.
      const attached = new Set([
        ...stringList(readIfKnown(() => role.props.managedPolicyArns)),
        ...ofType(args.resources, ROLE_POLICY_ATTACHMENT)
          .filter((a) => dependsOnVia(a, "role", role))
          .map((a) => readIfKnown(() => a.props.policyArn))
          .filter((arn): arn is string => typeof arn === "string"),
      ]);
      for (const arn of [...attached].filter((a) => AWS_MANAGED.test(a) && !allowed.includes(a))) {
        reportViolation(
          `Instance role '${role.name}' attaches the AWS-managed ${arn}: grant the actions the instance calls instead (Session Manager needs five).`,
          role.urn,
        );
      }
    }
  },
};
