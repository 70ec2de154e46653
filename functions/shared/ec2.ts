import type { DescribeInstancesCommandOutput, Instance } from "@aws-sdk/client-ec2";

/** The instances of one DescribeInstances page, across its reservations (the SDK types every list as optional). */
export function instancesOf(page: Pick<DescribeInstancesCommandOutput, "Reservations">): Instance[] {
  return page.Reservations?.flatMap((r) => r.Instances ?? []) ?? [];
}
