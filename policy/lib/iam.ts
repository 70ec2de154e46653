import { isRecord, stringList } from "./props";

/**
 * The parts of an IAM statement the rules reason about. Resource and Condition are deliberately
 * not read: they are often built from ARNs that are unknown on a first preview, and an action
 * grant scoped by resource or condition is still a grant of that action.
 */
export interface ActionStatement {
  effect: "Allow" | "Deny";
  /** Action patterns, or undefined when the statement uses NotAction. */
  actions?: string[];
  notActions?: string[];
  sid?: string;
}

/**
 * A document's `Statement` entries, unread. pulumi-aws accepts `string | PolicyDocument`; the
 * engine may hand back either, and `Statement` may be one object or a list.
 */
export function policyStatements(doc: unknown, where: string): unknown[] {
  if (doc === undefined || doc === null || doc === "") return [];
  let parsed: unknown = doc;
  if (typeof doc === "string") {
    try {
      parsed = JSON.parse(doc);
    } catch {
      throw new Error(`${where}: policy document is not valid JSON`);
    }
  }
  if (!isRecord(parsed)) throw new Error(`${where}: policy document is not an object`);
  const raw: unknown = parsed.Statement;
  return Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
}

/** A document's statements, each read down to its effect, actions and resources. */
export function readPolicyDocument(doc: unknown, where: string): ActionStatement[] {
  return policyStatements(doc, where).map((s, i) => readStatement(s, `${where} Statement[${i}]`));
}

function readStatement(s: unknown, where: string): ActionStatement {
  if (!isRecord(s)) throw new Error(`${where}: statement is not an object`);
  const effect = s.Effect;
  if (effect !== "Allow" && effect !== "Deny") throw new Error(`${where}: Effect must be Allow or Deny`);
  const sid = typeof s.Sid === "string" ? s.Sid : undefined;
  if (s.NotAction !== undefined) return { effect, notActions: stringList(s.NotAction), sid };
  return { effect, actions: stringList(s.Action), sid };
}

/** IAM action globbing: `*` and `?`, case-insensitive. */
export function actionPatternMatches(pattern: string, action: string): boolean {
  const re = new RegExp(
    "^" +
      pattern
        .split("")
        .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
        .join("") +
      "$",
    "i",
  );
  return re.test(action);
}

export function statementCovers(s: ActionStatement, action: string): boolean {
  if (s.notActions) return !s.notActions.some((p) => actionPatternMatches(p, action));
  return (s.actions ?? []).some((p) => actionPatternMatches(p, action));
}

/**
 * Allowed when some Allow covers the action and no Deny does. Any matching Deny wins, even one
 * narrowed by Resource or Condition: the rule cannot prove such a Deny leaves the grant usable.
 */
export function isActionAllowed(statements: readonly ActionStatement[], action: string): boolean {
  const allowed = statements.some((s) => s.effect === "Allow" && statementCovers(s, action));
  const denied = statements.some((s) => s.effect === "Deny" && statementCovers(s, action));
  return allowed && !denied;
}

/** `*` or `service:*` — a whole service (or everything) granted in one pattern. */
export function isWildcardAction(pattern: string): boolean {
  return pattern === "*" || /^[^:*?]+:\*+$/.test(pattern);
}

/** Wildcard grants in Allow statements; an Allow with NotAction grants everything else, so it counts. */
export function wildcardGrants(statements: readonly ActionStatement[], exempt: readonly string[] = []): string[] {
  const exemptLower = new Set(exempt.map((e) => e.toLowerCase()));
  const found: string[] = [];
  for (const s of statements) {
    if (s.effect !== "Allow") continue;
    if (s.notActions) {
      found.push(`NotAction [${s.notActions.join(", ")}]`);
      continue;
    }
    for (const a of s.actions ?? []) if (isWildcardAction(a) && !exemptLower.has(a.toLowerCase())) found.push(a);
  }
  return found;
}
