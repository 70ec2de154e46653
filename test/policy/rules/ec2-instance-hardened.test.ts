/** policy/rules/ec2-instance-hardened.ts: IMDSv2, no public IP, encrypted root and EBS volumes. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { T, instance, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "ec2-instance-hardened";

const hardened = { metadataOptions: { httpTokens: "required" }, associatePublicIpAddress: false, rootBlockDevice: { encrypted: true }, monitoring: true };

describe(POLICY, () => {
  it("passes the good ingest recording (the GPU instance)", async () => {
    // Prepare
    const rs = ingestRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes an instance with IMDSv2, no public IP and an encrypted root", async () => {
      // Prepare
      const rs = [instance("box", hardened)];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a bare instance once per missing setting (IMDSv2, public IP, root encryption)", async () => {
      // Prepare
      const rs = [instance("box", { instanceType: "t3.micro" })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.instance, "box"),
        count: 3,
        message: /^Instance 'box' must /,
        also: [["ec2-instance-detailed-monitoring-enabled", urnOf(T.instance, "box")]],
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; message?: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      { title: "IMDSv1 allowed", message: /httpTokens/, mutate: (rs) => setInput(rs, U.gpu, "metadataOptions", { httpTokens: "optional" }) },
      { title: "associatePublicIpAddress not set explicitly", mutate: (rs) => setInput(rs, U.gpu, "associatePublicIpAddress", undefined) },
      { title: "the root volume unencrypted", mutate: (rs) => setInput(rs, U.gpu, "rootBlockDevice", { volumeSize: 200 }) },
      {
        title: "an EBS volume unencrypted",
        message: /\/dev\/sdg/,
        mutate: (rs) =>
          setInput(rs, U.gpu, "ebsBlockDevices", [
            { deviceName: "/dev/sdf", encrypted: true },
            { deviceName: "/dev/sdg", volumeSize: 100 },
          ]),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = ingestRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: U.gpu, message: c.message });
      });
    }
  });
});
