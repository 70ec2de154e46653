/**
 * The product's one name: the npm package, the Pulumi project and config namespace, tag prefixes,
 * SSM paths and metric namespaces all derive from it.
 */
export const PRODUCT = "encache";

/** CloudWatch metric namespace of a part: `Encache/Ingest`, `Encache/Pool`… */
export function metricsNamespace(part: string): string {
  return `Encache/${part}`;
}
