import type { PolicyResource } from "@pulumi/policy";
import { isRecord } from "./props";
import { QUEUE_ROLE_TAG, QUEUE_ROLES } from "../contract";
import { EVENT_SOURCE_MAPPING, METRIC_ALARM, QUEUE } from "./types";

/**
 * Edges between resources come only from propertyDependencies: those URNs are known on a first
 * preview, while the ARNs and names that carry them are not.
 */
export function depsOf(resource: PolicyResource, key: string, type?: string): PolicyResource[] {
  const deps = resource.propertyDependencies[key] ?? [];
  return type === undefined ? deps : deps.filter((d) => d.type === type);
}

export function dependsOnVia(resource: PolicyResource, key: string, target: PolicyResource): boolean {
  return depsOf(resource, key).some((d) => d.urn === target.urn);
}

export function ofType(resources: readonly PolicyResource[], type: string): PolicyResource[] {
  return resources.filter((r) => r.type === type);
}

export function uniqueByUrn(resources: readonly PolicyResource[]): PolicyResource[] {
  const seen = new Map<string, PolicyResource>();
  for (const r of resources) if (!seen.has(r.urn)) seen.set(r.urn, r);
  return [...seen.values()];
}

/** A queue is a DLQ when another queue's redrivePolicy depends on it. */
export function dlqTargets(source: PolicyResource): PolicyResource[] {
  return depsOf(source, "redrivePolicy", QUEUE).filter((d) => d.urn !== source.urn);
}

export function dlqUrns(resources: readonly PolicyResource[]): Set<string> {
  const urns = new Set<string>();
  for (const q of ofType(resources, QUEUE)) for (const d of dlqTargets(q)) urns.add(d.urn);
  return urns;
}

export function sourcesOf(resources: readonly PolicyResource[], dlq: PolicyResource): PolicyResource[] {
  return ofType(resources, QUEUE).filter((q) => dlqTargets(q).some((d) => d.urn === dlq.urn));
}

/**
 * A terminal sink: a queue tagged as a quarantine, or as a DLQ that no redrive policy points at
 * (an EventBridge Scheduler / target dead-letter queue, whose edge can't be told apart from the
 * target's own inside the `target` input). Nothing may consume a sink; it must be alarmed.
 */
export function isTerminalSink(queue: PolicyResource): boolean {
  const tags: unknown = queue.props.tags;
  return isRecord(tags) && (tags[QUEUE_ROLE_TAG] === QUEUE_ROLES.quarantine || tags[QUEUE_ROLE_TAG] === QUEUE_ROLES.dlq);
}

/** Mappings whose eventSourceArn comes from this queue. */
export function mappingsReading(resources: readonly PolicyResource[], queue: PolicyResource): PolicyResource[] {
  return ofType(resources, EVENT_SOURCE_MAPPING).filter((m) => dependsOnVia(m, "eventSourceArn", queue));
}

/** Alarms with any input (dimensions, metric queries…) derived from this resource. */
export function alarmsOn(resources: readonly PolicyResource[], target: PolicyResource): PolicyResource[] {
  return ofType(resources, METRIC_ALARM).filter((a) => Object.values(a.propertyDependencies).some((deps) => deps.some((d) => d.urn === target.urn)));
}
