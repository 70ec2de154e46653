"use strict";
/**
 * Narrowing helpers for policy props. @pulumi/policy types props as Record<string, any>; reading
 * them through these keeps `any` from leaking into rule logic. Every read still goes through the
 * unknownCheckingProxy, so an unknown value throws and the engine reports "can't run during preview".
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.isRecord = isRecord;
exports.numberOr = numberOr;
exports.stringList = stringList;
exports.records = records;
exports.isUnknownValueError = isUnknownValueError;
exports.readIfKnown = readIfKnown;
function isRecord(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}
/** A number input; numeric strings are accepted because the engine may hand back strings after Check. */
function numberOr(value, fallback) {
    if (value === undefined || value === null || value === "")
        return fallback;
    const n = typeof value === "number" ? value : Number(value);
    if (!Number.isFinite(n))
        throw new Error(`expected a number, got ${JSON.stringify(value)}`);
    return n;
}
function stringList(value) {
    if (value === undefined || value === null)
        return [];
    if (typeof value === "string")
        return [value];
    if (Array.isArray(value))
        return value.filter((v) => typeof v === "string");
    return [];
}
function records(value) {
    return Array.isArray(value) ? value.filter(isRecord) : [];
}
/**
 * The @pulumi/policy UnknownValueError, recognised by shape: the pack and the offline plan may
 * load different copies of @pulumi/policy, so `instanceof` is not reliable across them.
 */
function isUnknownValueError(e) {
    return e instanceof Error && "unknownTypeSentinel" in e && Array.isArray(e.props);
}
/**
 * Reads a value that a rule may legitimately skip when it is not yet known (e.g. a redrive policy
 * string built from an ARN on a first preview). Use only where skipping is the documented rule.
 */
function readIfKnown(read) {
    try {
        return read();
    }
    catch (e) {
        if (isUnknownValueError(e))
            return undefined;
        throw e;
    }
}
