import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord, records } from "../lib/props";
import { LAUNCH_TEMPLATE } from "../lib/types";

/** pulumi-aws types some launch-template booleans as strings ("true"/"false"). */
function isTrue(v: unknown): boolean {
  return v === true || v === "true";
}
function isFalse(v: unknown): boolean {
  return v === false || v === "false";
}

/**
 * Warm pool instances are launched by a function, not reviewed by a person: the template is the
 * only place their hardening can live. IMDSv2 only, no public IP, every EBS volume encrypted.
 */
export const launchTemplateHardened: ResourceValidationPolicy = {
  name: "launch-template-hardened",
  description:
    "Launch templates require IMDSv2 (metadataOptions.httpTokens=required), declare network interfaces that all set " +
    "associatePublicIpAddress=false, and declare block device mappings whose EBS volumes are all encrypted.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== LAUNCH_TEMPLATE) args.notApplicable(`applies to ${LAUNCH_TEMPLATE}`);
    const props: Record<string, unknown> = args.props;
    const name = args.name;

    const metadata = props.metadataOptions;
    if (!isRecord(metadata) || metadata.httpTokens !== "required") {
      reportViolation(`Launch template '${name}' must require IMDSv2: set metadataOptions.httpTokens to "required".`);
    }

    const interfaces = records(props.networkInterfaces);
    if (interfaces.length === 0) {
      reportViolation(`Launch template '${name}' must declare a network interface with associatePublicIpAddress "false" (the subnet default may assign one).`);
    }
    interfaces.forEach((ni, i) => {
      if (!isFalse(ni.associatePublicIpAddress)) {
        reportViolation(`Launch template '${name}' network interface #${i} must set associatePublicIpAddress to "false".`);
      }
    });

    const ebsMappings = records(props.blockDeviceMappings).filter((m) => m.ebs !== undefined);
    if (ebsMappings.length === 0) {
      reportViolation(
        `Launch template '${name}' must declare its root volume in blockDeviceMappings with ebs.encrypted "true" (the AMI's default may be unencrypted).`,
      );
    }
    for (const m of ebsMappings) {
      const ebs = m.ebs;
      if (!isRecord(ebs) || !isTrue(ebs.encrypted)) {
        const label = typeof m.deviceName === "string" ? m.deviceName : "a device";
        reportViolation(`Launch template '${name}' volume ${label} must set ebs.encrypted to "true".`);
      }
    }
  },
};
