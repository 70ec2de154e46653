"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.depsOf = depsOf;
exports.dependsOnVia = dependsOnVia;
exports.ofType = ofType;
exports.uniqueByUrn = uniqueByUrn;
exports.dlqTargets = dlqTargets;
exports.dlqUrns = dlqUrns;
exports.sourcesOf = sourcesOf;
exports.isQuarantine = isQuarantine;
exports.mappingsReading = mappingsReading;
exports.alarmsOn = alarmsOn;
const props_1 = require("./props");
const types_1 = require("./types");
/**
 * Edges between resources come only from propertyDependencies: those URNs are known on a first
 * preview, while the ARNs and names that carry them are not.
 */
function depsOf(resource, key, type) {
    const deps = resource.propertyDependencies[key] ?? [];
    return type === undefined ? deps : deps.filter((d) => d.type === type);
}
function dependsOnVia(resource, key, target) {
    return depsOf(resource, key).some((d) => d.urn === target.urn);
}
function ofType(resources, type) {
    return resources.filter((r) => r.type === type);
}
function uniqueByUrn(resources) {
    const seen = new Map();
    for (const r of resources)
        if (!seen.has(r.urn))
            seen.set(r.urn, r);
    return [...seen.values()];
}
/** A queue is a DLQ when another queue's redrivePolicy depends on it. */
function dlqTargets(source) {
    return depsOf(source, "redrivePolicy", types_1.QUEUE).filter((d) => d.urn !== source.urn);
}
function dlqUrns(resources) {
    const urns = new Set();
    for (const q of ofType(resources, types_1.QUEUE))
        for (const d of dlqTargets(q))
            urns.add(d.urn);
    return urns;
}
function sourcesOf(resources, dlq) {
    return ofType(resources, types_1.QUEUE).filter((q) => dlqTargets(q).some((d) => d.urn === dlq.urn));
}
function isQuarantine(queue) {
    const tags = queue.props.tags;
    return (0, props_1.isRecord)(tags) && tags[types_1.QUEUE_ROLE_TAG] === types_1.QUARANTINE;
}
/** Mappings whose eventSourceArn comes from this queue. */
function mappingsReading(resources, queue) {
    return ofType(resources, types_1.EVENT_SOURCE_MAPPING).filter((m) => dependsOnVia(m, "eventSourceArn", queue));
}
/** Alarms with any input (dimensions, metric queries…) derived from this resource. */
function alarmsOn(resources, target) {
    return ofType(resources, types_1.METRIC_ALARM).filter((a) => Object.values(a.propertyDependencies).some((deps) => deps.some((d) => d.urn === target.urn)));
}
