import { z } from "zod";
import { INSTANCE_TYPE_PATTERN } from "../shared/patterns";

export const USAGE_CLASSES = ["on-demand", "spot"] as const;
export type UsageClass = (typeof USAGE_CLASSES)[number];

/**
 * An idle warm instance's advert, one SQS message on its resource class's pool queue.
 * Extra keys are kept (producers may add e.g. `az` or `ami_id`) but never relied on.
 *
 * | field | type | meaning |
 * |---|---|---|
 * | `instance_id` | `i-` + 8–17 hex | the EC2 instance |
 * | `resource_class` | string | the pool (queue) the advert belongs to |
 * | `instance_type` | EC2 type | e.g. `g5.xlarge` |
 * | `usage_class` | `on-demand` \| `spot` | purchase option |
 * | `cpu` | int > 0 | vCPUs |
 * | `memory_mib` | int > 0 | memory |
 * | `advertised_at` | ISO-8601 | when the advert was published |
 */
export const AdvertSchema = z.looseObject({
  instance_id: z.string().regex(/^i-[0-9a-f]{8,17}$/, "must be an EC2 instance id"),
  resource_class: z.string().min(1),
  instance_type: z.string().regex(INSTANCE_TYPE_PATTERN, "must be an EC2 instance type"),
  usage_class: z.enum(USAGE_CLASSES),
  cpu: z.number().int().positive(),
  memory_mib: z.number().int().positive(),
  advertised_at: z.iso.datetime({ offset: true }),
});

export type Advert = z.output<typeof AdvertSchema>;

/** What a resource class promises: every instance in it has this shape. */
export interface ResourceClassSpec {
  name: string;
  /** Instance types allowed in the class; the launch template uses the first. */
  instanceTypes: string[];
  cpu: number;
  memoryMib: number;
  usageClass: UsageClass;
}

/** A workflow's compute requirements; an omitted field does not filter. */
export interface WorkflowRequirements {
  allowedInstanceTypes?: readonly string[];
  usageClass?: UsageClass;
  minCpu?: number;
  minMemoryMib?: number;
}

export type AdvertParseResult = { ok: true; advert: Advert } | { ok: false; reason: string };

/** Schema check: body → advert, or the reason it is malformed. */
export function parseAdvert(body: string | undefined): AdvertParseResult {
  let json: unknown;
  try {
    json = JSON.parse(body ?? "");
  } catch (error) {
    return { ok: false, reason: `body is not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const result = AdvertSchema.safeParse(json);
  if (result.success) return { ok: true, advert: result.data };
  const reason = result.error.issues.map((i) => `${i.path.length > 0 ? i.path.join(".") : "body"}: ${i.message}`).join("; ");
  return { ok: false, reason: `schema: ${reason}` };
}

/** Why an advert contradicts its resource class, or null when it is consistent. */
export function classContradiction(advert: Advert, spec: ResourceClassSpec): string | null {
  if (advert.resource_class !== spec.name) return `resource_class ${advert.resource_class} on the ${spec.name} pool`;
  if (!spec.instanceTypes.includes(advert.instance_type)) return `instance_type ${advert.instance_type} is not in class ${spec.name}`;
  if (advert.cpu !== spec.cpu) return `cpu ${advert.cpu} differs from class ${spec.name} (${spec.cpu})`;
  if (advert.memory_mib !== spec.memoryMib) return `memory_mib ${advert.memory_mib} differs from class ${spec.name} (${spec.memoryMib})`;
  if (advert.usage_class !== spec.usageClass) return `usage_class ${advert.usage_class} differs from class ${spec.name} (${spec.usageClass})`;
  return null;
}

/** Why the advert does not fit the workflow, or null when it is suitable. */
export function unsuitability(advert: Advert, req: WorkflowRequirements): string | null {
  if (req.allowedInstanceTypes && !req.allowedInstanceTypes.includes(advert.instance_type)) return "instance_type";
  if (req.usageClass && advert.usage_class !== req.usageClass) return "usage_class";
  // An omitted minimum is 0: cpu and memory are positive.
  if (advert.cpu < (req.minCpu ?? 0)) return "cpu";
  if (advert.memory_mib < (req.minMemoryMib ?? 0)) return "memory_mib";
  return null;
}

/** The advert a refill run publishes for an instance of the class. */
export function advertFor(instanceId: string, instanceType: string, spec: ResourceClassSpec, now: Date): Advert {
  return {
    instance_id: instanceId,
    resource_class: spec.name,
    instance_type: instanceType,
    usage_class: spec.usageClass,
    cpu: spec.cpu,
    memory_mib: spec.memoryMib,
    advertised_at: now.toISOString(),
  };
}
