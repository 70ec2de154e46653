import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord, records } from "../lib/props";
import { EC2_INSTANCE } from "../lib/types";

/** The GPU instance holds model weights and customer payloads: IMDSv2 only, no public IP, encrypted disks. */
export const ec2InstanceHardened: ResourceValidationPolicy = {
  name: "ec2-instance-hardened",
  description:
    "EC2 instances require IMDSv2 (metadataOptions.httpTokens=required), set associatePublicIpAddress=false " +
    "explicitly, and encrypt the root and every EBS block device.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== EC2_INSTANCE) args.notApplicable(`applies to ${EC2_INSTANCE}`);
    const props: Record<string, unknown> = args.props;
    const name = args.name;

    const metadata = props.metadataOptions;
    if (!isRecord(metadata) || metadata.httpTokens !== "required") {
      reportViolation(`Instance '${name}' must require IMDSv2: set metadataOptions.httpTokens to "required".`);
    }
    if (props.associatePublicIpAddress !== false) {
      reportViolation(`Instance '${name}' must set associatePublicIpAddress: false explicitly.`);
    }
    const root = props.rootBlockDevice;
    if (!isRecord(root) || root.encrypted !== true) {
      reportViolation(`Instance '${name}' must set rootBlockDevice.encrypted: true.`);
    }
    records(props.ebsBlockDevices).forEach((device, i) => {
      if (device.encrypted !== true) {
        const label = typeof device.deviceName === "string" ? device.deviceName : `#${i}`;
        reportViolation(`Instance '${name}' EBS block device ${label} must set encrypted: true.`);
      }
    });
  },
};
