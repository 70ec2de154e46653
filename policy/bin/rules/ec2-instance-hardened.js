"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ec2InstanceHardened = void 0;
const props_1 = require("../lib/props");
const types_1 = require("../lib/types");
/** The GPU instance holds model weights and customer payloads: IMDSv2 only, no public IP, encrypted disks. */
exports.ec2InstanceHardened = {
    name: "ec2-instance-hardened",
    description: "EC2 instances require IMDSv2 (metadataOptions.httpTokens=required), set associatePublicIpAddress=false " +
        "explicitly, and encrypt the root and every EBS block device.",
    enforcementLevel: "mandatory",
    validateResource: (args, reportViolation) => {
        if (args.type !== types_1.EC2_INSTANCE)
            args.notApplicable(`applies to ${types_1.EC2_INSTANCE}`);
        const props = args.props;
        const name = args.name;
        const metadata = props.metadataOptions;
        if (!(0, props_1.isRecord)(metadata) || metadata.httpTokens !== "required") {
            reportViolation(`Instance '${name}' must require IMDSv2: set metadataOptions.httpTokens to "required".`);
        }
        if (props.associatePublicIpAddress !== false) {
            reportViolation(`Instance '${name}' must set associatePublicIpAddress: false explicitly.`);
        }
        const root = props.rootBlockDevice;
        if (!(0, props_1.isRecord)(root) || root.encrypted !== true) {
            reportViolation(`Instance '${name}' must set rootBlockDevice.encrypted: true.`);
        }
        (0, props_1.records)(props.ebsBlockDevices).forEach((device, i) => {
            if (device.encrypted !== true) {
                const label = typeof device.deviceName === "string" ? device.deviceName : `#${i}`;
                reportViolation(`Instance '${name}' EBS block device ${label} must set encrypted: true.`);
            }
        });
    },
};
