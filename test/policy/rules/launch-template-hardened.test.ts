/** policy/rules/launch-template-hardened.ts: IMDSv2, a private network interface and encrypted volumes, declared. */
import type { RecordedResource } from "../../../policy/testing/types";
import { P, poolRecording } from "../helpers/pool";
import { T, editInput, launchTemplate, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "launch-template-hardened";

const hardened = {
  metadataOptions: { httpTokens: "required" },
  networkInterfaces: [{ deviceIndex: 0, associatePublicIpAddress: "false" }],
  blockDeviceMappings: [{ deviceName: "/dev/sda1", ebs: { encrypted: "true" } }],
  monitoring: { enabled: true },
};

describe(POLICY, () => {
  it("passes the good pool recording (the gpu-small launch template)", async () => {
    // Prepare
    const rs = poolRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a template with IMDSv2, no public IP and an encrypted root", async () => {
      // Prepare
      const rs = [launchTemplate("lt", hardened)];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a bare template once per missing setting (IMDSv2, network interface, root volume)", async () => {
      // Prepare
      const rs = [launchTemplate("lt", { imageId: "ami-1" })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.launchTemplate, "lt"),
        count: 3,
        message: /^Launch template 'lt' must /,
        also: [["ec2-instance-detailed-monitoring-enabled", urnOf(T.launchTemplate, "lt")]],
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a launch template without IMDSv2",
        message: /must require IMDSv2/,
        mutate: (rs) => editInput(rs, P.launchTemplate, "metadataOptions", (m) => (m.httpTokens = "optional")),
      },
      {
        title: "a launch template that asks for a public IP",
        message: /network interface #0 must set associatePublicIpAddress/,
        mutate: (rs) => setInput(rs, P.launchTemplate, "networkInterfaces", [{ deviceIndex: 0, associatePublicIpAddress: "true" }]),
      },
      {
        title: "a launch template with no network interface (the subnet decides)",
        message: /must declare a network interface/,
        mutate: (rs) => setInput(rs, P.launchTemplate, "networkInterfaces", undefined),
      },
      {
        title: "a launch template with an unencrypted volume",
        message: /volume \/dev\/sdf must set ebs.encrypted/,
        mutate: (rs) =>
          setInput(rs, P.launchTemplate, "blockDeviceMappings", [
            { deviceName: "/dev/sda1", ebs: { encrypted: true } },
            { deviceName: "/dev/sdf", ebs: { encrypted: "false" } },
          ]),
      },
      {
        title: "a launch template that leaves the root volume to the AMI",
        message: /must declare its root volume/,
        mutate: (rs) => setInput(rs, P.launchTemplate, "blockDeviceMappings", []),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = poolRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: P.launchTemplate, message: c.message });
      });
    }
  });
});
