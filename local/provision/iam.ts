/** IAM: roles with their inline and managed policies, role policies, policies, instance profiles, attachments. */
import {
  AddRoleToInstanceProfileCommand,
  AttachRolePolicyCommand,
  CreateInstanceProfileCommand,
  CreatePolicyCommand,
  CreateRoleCommand,
  PutRolePolicyCommand,
  type Tag as IamTag,
} from "@aws-sdk/client-iam";
import { physicalName, shortHash } from "../../plan/mocks";
import { plainValue } from "../../plan/record";
import { creates, type Args, type ProvisionContext, type Provisioner, type Provisioners, type Result } from "./context";
import { num, objs, pascal, policyText, str, strs, tagMap, type Inputs } from "./inputs";

const iamTags = (tags: Record<string, string>): IamTag[] | undefined =>
  Object.keys(tags).length === 0 ? undefined : Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));

/** RolePolicy/InstanceProfile/Attachment take a role name, but pulumi also accepts the ARN. */
function roleName(role: string | undefined): string | undefined {
  return role?.startsWith("arn:") ? role.slice(role.lastIndexOf("/") + 1) : role;
}

async function role(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const created = await ctx.iam.send(
    new CreateRoleCommand({
      RoleName: name,
      AssumeRolePolicyDocument: policyText(inputs, "assumeRolePolicy"),
      ...pascal(str, inputs, ["path", "description", "permissionsBoundary"]),
      ...pascal(num, inputs, ["maxSessionDuration"]),
      Tags: iamTags(tagMap(inputs)),
    }),
  );
  for (const p of objs(inputs, "inlinePolicies")) {
    const policyName = str(p, "name");
    if (policyName) await ctx.iam.send(new PutRolePolicyCommand({ RoleName: name, PolicyName: policyName, PolicyDocument: policyText(p, "policy") }));
  }
  for (const policyArn of strs(inputs, "managedPolicyArns")) await ctx.iam.send(new AttachRolePolicyCommand({ RoleName: name, PolicyArn: policyArn }));
  return { id: name, state: { ...inputs, name, arn: created.Role?.Arn ?? `arn:aws:iam::${ctx.account}:role/${name}`, uniqueId: created.Role?.RoleId ?? "" } };
}

async function rolePolicy(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const roleTarget = roleName(str(inputs, "role"));
  await ctx.iam.send(new PutRolePolicyCommand({ RoleName: roleTarget, PolicyName: name, PolicyDocument: policyText(inputs, "policy") }));
  return { id: `${roleTarget}:${name}`, state: { ...inputs, name } };
}

async function policy(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const created = await ctx.iam.send(
    new CreatePolicyCommand({
      PolicyName: name,
      PolicyDocument: policyText(inputs, "policy"),
      ...pascal(str, inputs, ["path", "description"]),
      Tags: iamTags(tagMap(inputs)),
    }),
  );
  const arn = created.Policy?.Arn ?? `arn:aws:iam::${ctx.account}:policy/${name}`;
  return { id: arn, state: { ...inputs, name, arn, policyId: created.Policy?.PolicyId ?? "" } };
}

async function instanceProfile(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const created = await ctx.iam.send(new CreateInstanceProfileCommand({ InstanceProfileName: name, Path: str(inputs, "path"), Tags: iamTags(tagMap(inputs)) }));
  const roleInput = str(inputs, "role");
  if (roleInput) await ctx.iam.send(new AddRoleToInstanceProfileCommand({ InstanceProfileName: name, RoleName: roleName(roleInput) }));
  const profile = created.InstanceProfile;
  return {
    id: name,
    state: { ...inputs, name, arn: profile?.Arn ?? `arn:aws:iam::${ctx.account}:instance-profile/${name}`, uniqueId: profile?.InstanceProfileId ?? "" },
  };
}

/** Attachments of AWS-managed policies need moto's MOTO_IAM_LOAD_MANAGED_POLICIES; without it they stay uncreated. */
const rolePolicyAttachment: Provisioner = async (ctx, args, outcome) => {
  const inputs = await plainValue(args.inputs as Inputs);
  const policyArn = str(inputs, "policyArn");
  const roleTarget = roleName(str(inputs, "role"));
  try {
    await ctx.iam.send(new AttachRolePolicyCommand({ RoleName: roleTarget, PolicyArn: policyArn }));
    outcome.created = true;
  } catch (err) {
    if (!policyArn?.startsWith("arn:aws:iam::aws:policy/") || !["NoSuchEntity", "NoSuchEntityException"].includes((err as Error).name)) throw err;
    outcome.notes.push(`AWS-managed ${policyArn} is not loaded in moto (start it with MOTO_IAM_LOAD_MANAGED_POLICIES=true)`);
  }
  return { id: `${roleTarget}-${shortHash(args.name).slice(0, 20)}`, state: { ...inputs } };
};

export const iamProvisioners: Provisioners = {
  "aws:iam/role:Role": creates(role),
  "aws:iam/rolePolicy:RolePolicy": creates(rolePolicy),
  "aws:iam/policy:Policy": creates(policy),
  "aws:iam/instanceProfile:InstanceProfile": creates(instanceProfile),
  "aws:iam/rolePolicyAttachment:RolePolicyAttachment": rolePolicyAttachment,
};
