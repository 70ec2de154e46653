/**
 * IAM's evaluation of identity-policy Allow statements against one request, as AWS's policy
 * evaluation logic and condition reference describe it, for the operators the program's grants
 * write on request keys (the keys a call carries, such as dynamodb:LeadingKeys or aws:TagKeys):
 * - within a statement, every operator block holds, every key of a block holds (AND), and a key
 *   holds when the request's value matches any of the statement's values (OR); a negated operator
 *   (`StringNotEquals`, `StringNotLike`) holds when it matches none of them;
 * - a key absent from the request fails a plain operator, except a negated one, which holds;
 * - `ForAllValues:` holds when every value of the request's set passes, so also over an empty or
 *   absent set; `ForAnyValue:` when at least one does, so never over an empty one;
 * - `Null` "true" holds when the key is absent (an empty set counts as absent), "false" when present.
 * An operator it does not know throws: a test must not pass on a condition nobody evaluated.
 */
import { arnPatternMatches } from "./iam-match";

export interface RequestStatement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, string | string[]>>;
}

/** One authorisation: an action on a resource, and the condition keys the request carries. */
export interface IamRequest {
  action: string;
  resource: string;
  context: Record<string, string | string[]>;
}

const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

const BASE_OPERATORS: Record<string, { negated: boolean; match: (pattern: string, value: string) => boolean }> = {
  StringEquals: { negated: false, match: (p, v) => p === v },
  StringLike: { negated: false, match: arnPatternMatches },
  StringNotEquals: { negated: true, match: (p, v) => p === v },
  StringNotLike: { negated: true, match: arnPatternMatches },
  ArnEquals: { negated: false, match: (p, v) => p === v },
  ArnLike: { negated: false, match: arnPatternMatches },
};

function baseOperator(name: string) {
  const op = BASE_OPERATORS[name];
  if (!op) throw new Error(`iam-request: operator ${name} is not modelled; extend the evaluator`);
  return op;
}

/** Whether one value passes a base operator against the statement's values. */
function valuePasses(operator: string, wanted: string[], value: string): boolean {
  const op = baseOperator(operator);
  const matches = wanted.some((w) => op.match(w, value));
  return op.negated ? !matches : matches;
}

/** Whether `operator` on `key` holds for the request. Pure. */
export function conditionHolds(operator: string, key: string, expected: string | string[], context: IamRequest["context"]): boolean {
  const wanted = list(expected);
  const given = context[key];
  const values = list(given);
  if (operator === "Null") {
    const absent = values.length === 0;
    return wanted.every((w) => (w === "true" ? absent : !absent));
  }
  const qualified = /^(ForAllValues|ForAnyValue):(.+)$/.exec(operator);
  if (qualified) {
    const [, qualifier, base] = qualified;
    return qualifier === "ForAllValues" ? values.every((v) => valuePasses(base!, wanted, v)) : values.some((v) => valuePasses(base!, wanted, v));
  }
  if (given === undefined) return baseOperator(operator).negated;
  if (Array.isArray(given)) throw new Error(`iam-request: ${key} is multivalued; a plain ${operator} on it needs ForAllValues or ForAnyValue`);
  return valuePasses(operator, wanted, given);
}

function statementAllows(s: RequestStatement, request: IamRequest): boolean {
  if (s.Effect !== "Allow") return false;
  if (!list(s.Action).some((a) => arnPatternMatches(a.toLowerCase(), request.action.toLowerCase()))) return false;
  if (!list(s.Resource as string | string[]).some((r) => arnPatternMatches(r, request.resource))) return false;
  return Object.entries(s.Condition ?? {}).every(([operator, entries]) =>
    Object.entries(entries).every(([key, expected]) => conditionHolds(operator, key, expected, request.context)),
  );
}

/** Whether any statement allows the request (the statements hold no Deny: nothing overrides an Allow). Pure. */
export function allowed(statements: readonly RequestStatement[], request: IamRequest): boolean {
  if (statements.some((s) => s.Effect !== "Allow")) throw new Error("iam-request: Deny statements are not modelled");
  return statements.some((s) => statementAllows(s, request));
}
