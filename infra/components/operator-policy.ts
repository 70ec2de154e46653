import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { PRODUCT } from "../../policy/contract";
import type { Statement } from "../iam/document";
import { declaredPolicy, MANAGED_POLICY_TYPE } from "../iam/declared";

export interface OperatorPolicyArgs {
  /** The stack's environment: IAM policy names are global to the account, so the name carries it. */
  environment: string;
  /** The operator's statements, bound to this stack's resources (infra/parts/operator.ts). */
  statements: Statement[];
  /** @default {} */
  tags?: Record<string, string>;
}

/**
 * The customer-managed policy a person attaches to run `npm run ops` against this stack (least
 * privilege for people too). It attaches to nothing itself: who is on call is the account's
 * business, not the program's. Its document is declared beside it, like every role's, so the pack
 * judges it on a first preview.
 */
export class OperatorPolicy extends pulumi.ComponentResource {
  readonly policy: aws.iam.Policy;

  constructor(name: string, args: OperatorPolicyArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:access:OperatorPolicy", name, {}, opts);
    const resource = `${name}-policy`;
    this.policy = new aws.iam.Policy(
      resource,
      {
        name: operatorPolicyName(args.environment),
        description: `What an operator needs to run npm run ops against the ${args.environment} stack, on its resources only`,
        policy: declaredPolicy(args.statements, { resource, resourceType: MANAGED_POLICY_TYPE, parent: this }),
        tags: args.tags ?? {},
      },
      { parent: this },
    );
    this.registerOutputs({ policyArn: this.policy.arn });
  }
}

/** `encache-operator-<environment>`. Pure. */
export function operatorPolicyName(environment: string): string {
  return `${PRODUCT}-operator-${environment}`;
}
