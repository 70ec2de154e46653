/**
 * An IAM grant as the function code declares it, beside the code that needs it
 * (`functions/<part>/iam.ts`). Resources are symbolic (`"state-table"`): the program binds each
 * to ARNs and conditions (`infra/parts/<part>.ts`), so the grant is written once and the role
 * is derived from it.
 */
export interface Grant<R extends string = string> {
  /** The statement id the role's policy uses. Grants with one Sid become one statement. */
  readonly sid: string;
  /** Exact action names. Never `*` or `service:*`: the pack rejects them. */
  readonly actions: readonly string[];
  /** What the actions apply to, bound to ARNs by the program. */
  readonly resource: R;
  /**
   * Conditions that belong to the grant itself whatever the resource is (`iam:PassedToService`,
   * `ec2:CreateAction`); conditions that scope a resource come with its binding.
   */
  readonly condition?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** Authorised by AWS as part of another call (RunTask's iam:PassRole), not sent by the code. */
  readonly implied?: boolean;
}

/** Every action a list of grants allows, distinct and sorted. */
export function grantedActions(grants: readonly Grant[]): string[] {
  return [...new Set(grants.flatMap((g) => g.actions))].sort();
}

/** The actions the code sends itself (what a test of the code's calls compares against). */
export function calledActions(grants: readonly Grant[]): string[] {
  return grantedActions(grants.filter((g) => !g.implied));
}
