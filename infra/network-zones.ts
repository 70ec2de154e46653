/**
 * Zones pinned by AZ ID. An AZ name (`us-east-1a`) maps to a different physical zone in each
 * account; an AZ ID (`use1-az1`) is the same zone everywhere. The GPU instance types and Lambda's
 * VPC networking are not offered in every zone, so a stack names the zones it has checked by ID,
 * and the program maps them to this account's names for awsx's VPC, which takes names.
 */
import * as aws from "@pulumi/aws";
import { StackConfigError } from "./config";

export const ZONE_IDS_KEY = "encache:network.availabilityZoneIds";

/** The names of `ids`, in their order, from a DescribeAvailabilityZones answer; or the IDs it lacks. Pure. */
export function namesInIdOrder(
  ids: readonly string[],
  zones: { names: readonly string[]; zoneIds: readonly string[] },
): { names: string[] } | { missing: string[] } {
  const nameOf = new Map(zones.zoneIds.map((id, i) => [id, zones.names[i]]));
  const missing = ids.filter((id) => nameOf.get(id) === undefined);
  if (missing.length > 0) return { missing };
  return { names: ids.map((id) => nameOf.get(id)!) };
}

/** This account's names for the zone IDs; fails naming the config key when one is not an available zone here. */
export async function zoneNamesFor(ids: readonly string[]): Promise<string[]> {
  const zones = await aws.getAvailabilityZones({ filters: [{ name: "zone-id", values: [...ids] }], state: "available" });
  const result = namesInIdOrder(ids, zones);
  if ("names" in result) return result.names;
  throw new StackConfigError([
    {
      key: ZONE_IDS_KEY,
      reason:
        `${result.missing.join(", ")}: not an available zone of ${zones.id} for this account ` +
        "(list them with `aws ec2 describe-availability-zones --query 'AvailabilityZones[].[ZoneId,ZoneName]'`)",
    },
  ]);
}
