/** policy/rules/lb-internal.ts: the GPU fleet's load balancer is internal (ingest in fleet mode, issue 27). */
import type { RecordedResource } from "../../../policy/testing/types";
import { F, FT, ingestFleetRecording } from "../helpers/ingest-fleet";
import { resource, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolationOf, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "lb-internal";

describe(POLICY, () => {
  it("passes the good ingest fleet-mode recording (its internal Application Load Balancer)", async () => {
    // Prepare
    const rs = ingestFleetRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes an internal load balancer", async () => {
      // Prepare
      const rs = [resource(FT.loadBalancer, "lb", { internal: true, loadBalancerType: "application" })];
      // Act
      const violations = await evaluate(rs);
      // Assess: it declares no security group, which is lb-sg-admits-consumers-only's concern.
      expectNoViolationOf(violations, POLICY);
    });

    it("fails an aws.alb.LoadBalancer (the older token) left internet-facing", async () => {
      // Prepare
      const rs = [resource("aws:alb/loadBalancer:LoadBalancer", "alb", { loadBalancerType: "application" })];
      const urn = urnOf("aws:alb/loadBalancer:LoadBalancer", "alb");
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn,
        message: /^Load balancer 'alb' leaves internal unset \(internet-facing\): set internal: true/,
        also: [["lb-sg-admits-consumers-only", urn]],
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      { title: "a load balancer set internet-facing", message: /sets internal to false/, mutate: (rs) => setInput(rs, F.loadBalancer, "internal", false) },
      {
        title: "a load balancer that leaves internal unset (AWS's default is internet-facing)",
        message: /leaves internal unset/,
        mutate: (rs) => setInput(rs, F.loadBalancer, "internal", undefined),
      },
      {
        title: 'a load balancer whose internal is the string "false"',
        message: /sets internal to "false"/,
        mutate: (rs) => setInput(rs, F.loadBalancer, "internal", "false"),
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
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: F.loadBalancer, message: c.message });
      });
    }
  });

  it('passes internal given as the string "true" (as the engine may hand booleans over)', async () => {
    // Prepare
    const rs = ingestFleetRecording();
    setInput(rs, F.loadBalancer, "internal", "true");
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });
});
