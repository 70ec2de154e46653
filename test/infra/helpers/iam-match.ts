/**
 * Just enough of IAM's evaluation to ask "would this Allow statement apply to that resource?":
 * ARN patterns with `*` and `?`, the action's service against the resource's, and the condition
 * keys that single out a resource (its tags, the request's tags, the ECS cluster). Keys that do
 * not single out a resource (iam:PassedToService, ec2:CreateAction…) count as met, so the answer
 * errs towards "applies": a test built on it can only be too strict.
 */

export interface IamStatement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

/** A resource as a grant sees it: its ARN, its tags and the context keys a request on it carries. */
export interface TargetResource {
  arn: string;
  tags: Record<string, string>;
  /** Condition keys beyond tags, such as `ecs:cluster` for a task and its task definition. */
  context?: Record<string, string>;
  /** Where it comes from, for the failure message. */
  label: string;
}

/** IAM's ARN wildcards: `*` any run of characters, `?` exactly one. */
export function arnPatternMatches(pattern: string, arn: string): boolean {
  const regex = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${regex}$`).test(arn);
}

const serviceOfArn = (arn: string): string | undefined => arn.split(":")[2];

/** The value a request on `target` carries for condition key `key`, or undefined when the key does not single out a resource. */
function contextValue(key: string, target: TargetResource): { known: true; value: string | undefined } | { known: false } {
  const tag = /^(aws:ResourceTag|aws:RequestTag|ec2:ResourceTag)\/(.+)$/.exec(key);
  // A request that creates one of the stack's resources carries the tags that resource ends up with.
  if (tag) return { known: true, value: target.tags[tag[2]!] };
  if (target.context && key in target.context) return { known: true, value: target.context[key] };
  if (key === "ecs:cluster") return { known: true, value: undefined };
  return { known: false };
}

const EQUALITY = new Set(["StringEquals", "ArnEquals", "StringLike", "ArnLike"]);

function conditionsHold(condition: IamStatement["Condition"], target: TargetResource): boolean {
  for (const [operator, entries] of Object.entries(condition ?? {})) {
    for (const [key, expected] of Object.entries(entries)) {
      const actual = contextValue(key, target);
      if (!actual.known) continue;
      if (!EQUALITY.has(operator)) throw new Error(`iam-match: operator ${operator} on ${key} is not modelled; extend the matcher`);
      const wildcard = operator.endsWith("Like");
      const holds = [expected].flat().some((e) => actual.value !== undefined && (wildcard ? arnPatternMatches(e, actual.value) : e === actual.value));
      if (!holds) return false;
    }
  }
  return true;
}

/** True when the Allow statement grants at least one of its actions on `target`. */
export function statementApplies(statement: IamStatement, target: TargetResource): boolean {
  if (statement.Effect !== "Allow") return false;
  const service = serviceOfArn(target.arn);
  const actions = [statement.Action].flat();
  if (!actions.some((a) => a === "*" || a.split(":")[0] === service)) return false;
  if (![statement.Resource].flat().some((pattern) => arnPatternMatches(pattern, target.arn))) return false;
  return conditionsHold(statement.Condition, target);
}
