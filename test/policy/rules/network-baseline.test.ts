/** sg-egress-restricted, vpc-flow-logs, vpc-default-sg-closed: the network baseline. */
import type { RecordedResource } from "../../../policy/testing/types";
import { X, platformRecording } from "../helpers/platform";
import { editInput, remove, setInput } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

type Egress = Array<Record<string, unknown>>;

describe("network baseline rules", () => {
  for (const mode of ["update", "first-preview"] as Mode[]) {
    it(`pass the platform network: flow log, closed default group, HTTPS-only egress plus the GPU port inside the VPC (${mode})`, async () => {
      expectNoViolations(await evaluate(platformRecording(), { mode }));
    });
  }

  const cases: Array<{ policy: string; title: string; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }> = [
    {
      policy: "sg-egress-restricted",
      title: "all protocols to anywhere",
      urn: X.consumersSg,
      message: /every protocol to anywhere/,
      mutate: (rs) => editInput<Egress>(rs, X.consumersSg, "egress", (e) => e.push({ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"] })),
    },
    {
      policy: "sg-egress-restricted",
      title: "a port range to anywhere over IPv6",
      urn: X.consumersSg,
      message: /tcp ports 1024-65535 to anywhere/,
      mutate: (rs) =>
        editInput<Egress>(rs, X.consumersSg, "egress", (e) => e.push({ protocol: "tcp", fromPort: 1024, toPort: 65535, ipv6CidrBlocks: ["::/0"] })),
    },
    {
      policy: "sg-egress-restricted",
      title: "plain HTTP to anywhere (80 is not an open port)",
      urn: X.consumersSg,
      message: /tcp ports 80-80/,
      mutate: (rs) => editInput<Egress>(rs, X.consumersSg, "egress", (e) => e.push({ protocol: "tcp", fromPort: 80, toPort: 80, cidrBlocks: ["0.0.0.0/0"] })),
    },
    { policy: "vpc-flow-logs", title: "a VPC without a flow log", urn: X.vpc, message: /has no flow log/, mutate: (rs) => remove(rs, X.flowLog) },
    {
      policy: "vpc-flow-logs",
      title: "a flow log of rejected traffic only",
      urn: X.vpc,
      message: /trafficType ALL/,
      mutate: (rs) => setInput(rs, X.flowLog, "trafficType", "REJECT"),
    },
    {
      policy: "vpc-default-sg-closed",
      title: "a VPC whose default group is left to AWS",
      urn: X.vpc,
      message: /keeps AWS's rules/,
      mutate: (rs) => remove(rs, X.defaultSg),
    },
    {
      policy: "vpc-default-sg-closed",
      title: "a managed default group with a rule",
      urn: X.defaultSg,
      message: /has 1 rule/,
      mutate: (rs) => setInput(rs, X.defaultSg, "ingress", [{ protocol: "-1", fromPort: 0, toPort: 0, self: true }]),
    },
  ];
  for (const c of cases) {
    it(`${c.policy} fails ${c.title}`, async () => {
      // Prepare
      const rs = platformRecording();
      c.mutate(rs);
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, { policy: c.policy, level: "mandatory", urn: c.urn, message: c.message });
    });
  }

  it("sg-egress-restricted takes the stack's open ports from config", async () => {
    const rs = platformRecording();
    editInput<Egress>(rs, X.consumersSg, "egress", (e) => e.push({ protocol: "tcp", fromPort: 80, toPort: 80, cidrBlocks: ["0.0.0.0/0"] }));
    expectNoViolations(await evaluate(rs, { config: { "sg-egress-restricted": { enforcementLevel: "mandatory", openPorts: [443, 80] } } }));
  });
});
