"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.readPolicyDocument = readPolicyDocument;
exports.actionPatternMatches = actionPatternMatches;
exports.statementCovers = statementCovers;
exports.isActionAllowed = isActionAllowed;
exports.isWildcardAction = isWildcardAction;
exports.wildcardGrants = wildcardGrants;
const props_1 = require("./props");
/** pulumi-aws accepts `string | PolicyDocument`; the engine may hand back either. */
function readPolicyDocument(doc, where) {
    if (doc === undefined || doc === null || doc === "")
        return [];
    let parsed = doc;
    if (typeof doc === "string") {
        try {
            parsed = JSON.parse(doc);
        }
        catch {
            throw new Error(`${where}: policy document is not valid JSON`);
        }
    }
    if (!(0, props_1.isRecord)(parsed))
        throw new Error(`${where}: policy document is not an object`);
    const raw = parsed.Statement;
    const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
    return list.map((s, i) => readStatement(s, `${where} Statement[${i}]`));
}
function readStatement(s, where) {
    if (!(0, props_1.isRecord)(s))
        throw new Error(`${where}: statement is not an object`);
    const effect = s.Effect;
    if (effect !== "Allow" && effect !== "Deny")
        throw new Error(`${where}: Effect must be Allow or Deny`);
    const sid = typeof s.Sid === "string" ? s.Sid : undefined;
    if (s.NotAction !== undefined)
        return { effect, notActions: (0, props_1.stringList)(s.NotAction), sid };
    return { effect, actions: (0, props_1.stringList)(s.Action), sid };
}
/** IAM action globbing: `*` and `?`, case-insensitive. */
function actionPatternMatches(pattern, action) {
    const re = new RegExp("^" +
        pattern
            .split("")
            .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
            .join("") +
        "$", "i");
    return re.test(action);
}
function statementCovers(s, action) {
    if (s.notActions)
        return !s.notActions.some((p) => actionPatternMatches(p, action));
    return (s.actions ?? []).some((p) => actionPatternMatches(p, action));
}
/**
 * Allowed when some Allow covers the action and no Deny does. Any matching Deny wins, even one
 * narrowed by Resource or Condition: the rule cannot prove such a Deny leaves the grant usable.
 */
function isActionAllowed(statements, action) {
    const allowed = statements.some((s) => s.effect === "Allow" && statementCovers(s, action));
    const denied = statements.some((s) => s.effect === "Deny" && statementCovers(s, action));
    return allowed && !denied;
}
/** `*` or `service:*` — a whole service (or everything) granted in one pattern. */
function isWildcardAction(pattern) {
    return pattern === "*" || /^[^:*?]+:\*+$/.test(pattern);
}
/** Wildcard grants in Allow statements; an Allow with NotAction grants everything else, so it counts. */
function wildcardGrants(statements, exempt = []) {
    const exemptLower = new Set(exempt.map((e) => e.toLowerCase()));
    const found = [];
    for (const s of statements) {
        if (s.effect !== "Allow")
            continue;
        if (s.notActions) {
            found.push(`NotAction [${s.notActions.join(", ")}]`);
            continue;
        }
        for (const a of s.actions ?? [])
            if (isWildcardAction(a) && !exemptLower.has(a.toLowerCase()))
                found.push(a);
    }
    return found;
}
