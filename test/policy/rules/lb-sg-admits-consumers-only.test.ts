/** policy/rules/lb-sg-admits-consumers-only.ts: the fleet's load balancer admits the consumers' security groups only (issue 27). */
import type { RecordedResource } from "../../../policy/testing/types";
import { U } from "../helpers/ingest";
import { X } from "../helpers/platform";
import { F, FT, ingestFleetRecording } from "../helpers/ingest-fleet";
import { add, editInput, find, resource, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolationOf, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "lb-sg-admits-consumers-only";
/** The consumers that POST to the load balancer: with no group of the stack on it, gpu-paths-admitted cannot verify their path either. */
const POSTERS_UNVERIFIED: [string, string][] = [
  ["gpu-paths-admitted", U.windowFn],
  ["gpu-paths-admitted", U.dlqFn],
];

type Rules = Array<Record<string, unknown>>;
const addIngress = (rs: RecordedResource[], rule: Record<string, unknown>) => editInput<Rules>(rs, F.lbSg, "ingress", (i) => i.push(rule));
const standalone = urnOf(FT.ingressRule, "ingest-gpu-lb-extra");
/** A standalone ingress rule on the load balancer's group, with these inputs. */
const ruleOnLbSg = (inputs: Record<string, unknown>, deps: Record<string, string[]> = {}) =>
  resource(
    FT.ingressRule,
    "ingest-gpu-lb-extra",
    { securityGroupId: "sg-0lb", ipProtocol: "tcp", fromPort: 80, toPort: 80, ...inputs },
    {
      deps: { securityGroupId: [F.lbSg], ...deps },
    },
  );

describe(POLICY, () => {
  for (const mode of ["update", "first-preview"] as Mode[]) {
    it(`passes the good ingest fleet-mode recording: one group, admitting the consumers' group on the service port (${mode})`, async () => {
      // Prepare
      const rs = ingestFleetRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });
  }

  describe("built in one line", () => {
    it("fails a load balancer with no security group at all", async () => {
      // Prepare
      const rs = [resource(FT.loadBalancer, "lb", { internal: true, loadBalancerType: "application" })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(FT.loadBalancer, "lb"),
        message: /^Load balancer 'lb' declares no security group/,
      });
    });

    it("passes a load balancer whose group admits another group and itself (self)", async () => {
      // Prepare
      const sg = resource(FT.securityGroup, "lb-sg", { ingress: [{ protocol: "tcp", fromPort: 443, toPort: 443, securityGroups: ["sg-1"], self: true }] });
      const lb = resource(
        FT.loadBalancer,
        "lb",
        { internal: true, securityGroups: ["sg-lb"] },
        { deps: { securityGroups: [urnOf(FT.securityGroup, "lb-sg")] } },
      );
      // Act
      const violations = await evaluate([sg, lb]);
      // Assess
      expectNoViolationOf(violations, POLICY);
    });
  });

  describe("fails", () => {
    const cases: { title: string; urn: string; message: RegExp; also?: [string, string][]; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "an inline ingress rule from 0.0.0.0/0",
        urn: F.lbSg,
        message: /^Security group 'ingest-gpu-lb-sg' of load balancer 'ingest-gpu-lb': ingress\[1\] admits cidrBlocks 0\.0\.0\.0\/0, i\.e\. anywhere\./,
        mutate: (rs) => addIngress(rs, { protocol: "tcp", fromPort: 80, toPort: 80, cidrBlocks: ["0.0.0.0/0"] }),
      },
      {
        title: "an inline ingress rule from ::/0",
        urn: F.lbSg,
        message: /ingress\[1\] admits ipv6CidrBlocks ::\/0, i\.e\. anywhere/,
        mutate: (rs) => addIngress(rs, { protocol: "tcp", fromPort: 80, toPort: 80, ipv6CidrBlocks: ["::/0"] }),
      },
      {
        title: "an inline ingress rule from the VPC's own range (a range is not a consumer)",
        urn: F.lbSg,
        message: /ingress\[1\] admits cidrBlocks 10\.40\.0\.0\/16\. Admit/,
        mutate: (rs) => addIngress(rs, { protocol: "tcp", fromPort: 80, toPort: 80, cidrBlocks: ["10.40.0.0/16"] }),
      },
      {
        title: "the consumers' group and a CIDR in the same inline rule",
        urn: F.lbSg,
        message: /ingress\[0\] admits cidrBlocks 10\.40\.1\.0\/24/,
        mutate: (rs) => editInput<Rules>(rs, F.lbSg, "ingress", (i) => (i[0]!.cidrBlocks = ["10.40.1.0/24"])),
      },
      {
        title: "an inline ingress rule from a prefix list",
        urn: F.lbSg,
        message: /ingress\[1\] admits prefixListIds pl-0123/,
        mutate: (rs) => addIngress(rs, { protocol: "tcp", fromPort: 80, toPort: 80, prefixListIds: ["pl-0123"] }),
      },
      {
        title: "a standalone SecurityGroupIngressRule on the group from 0.0.0.0/0",
        urn: standalone,
        message:
          /^Ingress rule 'ingest-gpu-lb-extra' of security group 'ingest-gpu-lb-sg' \(load balancer 'ingest-gpu-lb'\) admits cidrIpv4 0\.0\.0\.0\/0, i\.e\. anywhere/,
        mutate: (rs) => add(rs, ruleOnLbSg({ cidrIpv4: "0.0.0.0/0" })),
      },
      {
        title: "a standalone SecurityGroupIngressRule on the group from a prefix list",
        urn: standalone,
        message: /admits prefixListId pl-0123/,
        mutate: (rs) => add(rs, ruleOnLbSg({ prefixListId: "pl-0123" })),
      },
      {
        title: "a load balancer that declares no security group",
        urn: F.loadBalancer,
        message: /^Load balancer 'ingest-gpu-lb' declares no security group: AWS would give it the VPC's default group/,
        also: POSTERS_UNVERIFIED,
        mutate: (rs) => {
          setInput(rs, F.loadBalancer, "securityGroups", undefined);
          delete find(rs, F.loadBalancer).propertyDependencies.securityGroups;
        },
      },
      {
        title: "a load balancer naming a security group by a literal id (not a SecurityGroup in the stack: cannot verify)",
        urn: F.loadBalancer,
        message: /names 1 security group\(s\) that are not SecurityGroups in this stack: what they admit cannot be verified/,
        also: POSTERS_UNVERIFIED,
        mutate: (rs) => {
          find(rs, F.loadBalancer).propertyDependencies.securityGroups = [];
        },
      },
      {
        title: "a load balancer naming the stack's group and a literal id",
        urn: F.loadBalancer,
        message: /names 1 security group\(s\) that are not SecurityGroups/,
        mutate: (rs) => setInput(rs, F.loadBalancer, "securityGroups", ["sg-0lb", "sg-0elsewhere"]),
      },
      {
        title: "a load balancer whose security groups come from another resource (the VPC component's default group)",
        urn: F.loadBalancer,
        message: /takes security groups from 'platform-vpc' \(awsx:ec2:Vpc\), not SecurityGroups in this stack/,
        also: POSTERS_UNVERIFIED,
        mutate: (rs) => {
          find(rs, F.loadBalancer).propertyDependencies.securityGroups = [X.vpc];
        },
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = ingestFleetRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message, also: c.also });
      });
    }
  });

  describe("passes", () => {
    const cases: { title: string; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a standalone SecurityGroupIngressRule on the group from another security group",
        mutate: (rs) => add(rs, ruleOnLbSg({ referencedSecurityGroupId: "sg-0consumers" }, { referencedSecurityGroupId: [X.consumersSg] })),
      },
      {
        title: "a CIDR rule on another group (the GPU instances' group is not the load balancer's)",
        mutate: (rs) =>
          add(
            rs,
            resource(
              FT.ingressRule,
              "ingest-gpu-ssm",
              { securityGroupId: "sg-0gpu", ipProtocol: "tcp", fromPort: 443, toPort: 443, cidrIpv4: "10.40.0.0/16" },
              {
                deps: { securityGroupId: [F.gpuSg] },
              },
            ),
          ),
      },
      {
        title: "empty address lists, as the provider stores an unset one",
        mutate: (rs) =>
          editInput<Rules>(rs, F.lbSg, "ingress", (i) => Object.assign(i[0]!, { cidrBlocks: [], ipv6CidrBlocks: [], prefixListIds: [], self: false })),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = ingestFleetRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectNoViolations(violations);
      });
    }
  });

  it("judges a group shared by two load balancers once, naming both", async () => {
    // Prepare
    const rs = ingestFleetRecording();
    add(rs, resource(FT.loadBalancer, "ingest-gpu-lb-2", { internal: true, securityGroups: ["sg-0lb"] }, { deps: { securityGroups: [F.lbSg] } }));
    addIngress(rs, { protocol: "tcp", fromPort: 80, toPort: 80, cidrBlocks: ["0.0.0.0/0"] });
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectViolation(violations, { policy: POLICY, level: "mandatory", urn: F.lbSg, message: /of load balancer 'ingest-gpu-lb', 'ingest-gpu-lb-2'/ });
  });

  it("ignores security groups no load balancer uses", async () => {
    // Prepare: the consumers' own group gains a CIDR ingress (sg-egress-restricted judges egress only).
    const rs = ingestFleetRecording();
    setInput(rs, X.consumersSg, "ingress", [{ protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: ["10.0.0.0/8"] }]);
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolationOf(violations, POLICY);
  });
});
