import * as aws from "@pulumi/aws";
import type * as pulumi from "@pulumi/pulumi";
import { assumedBy, sessionManagerStatements, type Statement, trustScope } from "../iam/document";
import { declaredPolicy, ROLE_POLICY_TYPE } from "../iam/declared";

/**
 * The hardening every EC2 instance of the platform shares, declared once for the GPU instance, the
 * GPU fleet's template and the pool's templates: its role and profile (Session Manager's five
 * actions, no managed policy, the instance's own grants beside them), IMDSv2 only with one hop,
 * and an encrypted gp3 root that goes with the instance.
 */

/** IMDSv2 only, one hop: a container on a bridge network cannot reach the role's credentials. */
export const HARDENED_METADATA = { httpTokens: "required", httpEndpoint: "enabled", httpPutResponseHopLimit: 1 } as const;

/** A launch template's root volume: encrypted gp3, deleted with the instance (the template's string booleans). */
export function encryptedRootVolume(deviceName: string, volumeSize: number) {
  return { deviceName, ebs: { volumeType: "gp3", volumeSize, encrypted: "true", deleteOnTermination: "true" } };
}

/**
 * `<prefix>-role` (assumed by EC2 only), `<prefix>-session-manager` (Session Manager only, not
 * AmazonSSMManagedInstanceCore), `<prefix>-host` when `statements` are given (what the instance's own
 * services call), and `<prefix>-profile`, all children of `parent`.
 */
export function declareInstanceRole(
  prefix: string,
  scope: { parent: pulumi.Resource; tags: Record<string, string>; statements?: Statement[] },
): { role: aws.iam.Role; profile: aws.iam.InstanceProfile } {
  const { parent, tags } = scope;
  const role = new aws.iam.Role(`${prefix}-role`, { assumeRolePolicy: assumedBy("ec2.amazonaws.com"), tags }, { parent });
  const policy = (name: string, statements: Statement[]) =>
    new aws.iam.RolePolicy(name, { role: role.id, policy: declaredPolicy(statements, { resource: name, resourceType: ROLE_POLICY_TYPE, parent }) }, { parent });
  policy(`${prefix}-session-manager`, sessionManagerStatements(trustScope(parent)));
  if (scope.statements && scope.statements.length > 0) policy(`${prefix}-host`, scope.statements);
  const profile = new aws.iam.InstanceProfile(`${prefix}-profile`, { role: role.name, tags }, { parent });
  return { role, profile };
}
