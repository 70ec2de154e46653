/** policy/rules/warm-pool-on-demand-only.ts: a warm pool only on a group AWS accepts one for (issue 27). */
import type { RecordedResource } from "../../../policy/testing/types";
import { F, ingestFleetRecording } from "../helpers/ingest-fleet";
import { find, setInput } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "warm-pool-on-demand-only";

const warmPool = { poolState: "Stopped", minSize: 0, maxGroupPreparedCapacity: 2 };

/** The group in the single-template form: `launchTemplate: { id, version }` from the stack's template, no mixed instances policy. */
function singleTemplate(rs: RecordedResource[]): void {
  setInput(rs, F.group, "mixedInstancesPolicy", undefined);
  setInput(rs, F.group, "launchTemplate", { id: "lt-0fleet0123456789", version: "$Latest" });
  const group = find(rs, F.group);
  delete group.propertyDependencies.mixedInstancesPolicy;
  group.propertyDependencies.launchTemplate = [F.launchTemplate];
}

describe(POLICY, () => {
  it("passes the good ingest fleet-mode recording (a Spot group, no warm pool)", async () => {
    // Prepare
    const rs = ingestFleetRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("fails", () => {
    const cases: { title: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a warm pool on the Spot mixed group",
        message: /^Auto Scaling group 'ingest-gpu' has a warmPool, but it has a mixedInstancesPolicy: AWS refuses a warm pool/,
        mutate: (rs) => setInput(rs, F.group, "warmPool", warmPool),
      },
      {
        title: "a warm pool on a mixed group that is all On-Demand (any mixed instances policy)",
        message: /has a warmPool, but it has a mixedInstancesPolicy:/,
        mutate: (rs) => {
          setInput(rs, F.group, "mixedInstancesPolicy", {
            instancesDistribution: { onDemandPercentageAboveBaseCapacity: 100 },
            launchTemplate: { launchTemplateSpecification: { launchTemplateId: "lt-0fleet0123456789", version: "$Latest" } },
          });
          setInput(rs, F.group, "warmPool", warmPool);
        },
      },
      {
        title: "a warm pool on a single-template group whose template requests Spot",
        message: /has a warmPool, but its launch template 'ingest-gpu-lt' requests Spot \(instanceMarketOptions\.marketType "spot"\):/,
        mutate: (rs) => {
          singleTemplate(rs);
          setInput(rs, F.launchTemplate, "instanceMarketOptions", { marketType: "spot" });
          setInput(rs, F.group, "warmPool", warmPool);
        },
      },
      {
        title: "both at once: one violation naming both",
        message: /but it has a mixedInstancesPolicy and its launch template 'ingest-gpu-lt' requests Spot/,
        mutate: (rs) => {
          setInput(rs, F.launchTemplate, "instanceMarketOptions", { marketType: "spot" });
          setInput(rs, F.group, "warmPool", warmPool);
        },
      },
    ];
    for (const mode of ["update", "first-preview"] as Mode[]) {
      for (const c of cases) {
        it(`${c.title} (${mode})`, async () => {
          // Prepare
          const rs = ingestFleetRecording();
          c.mutate(rs);
          // Act
          const violations = await evaluate(rs, { mode });
          // Assess
          expectViolation(violations, { policy: POLICY, level: "mandatory", urn: F.group, message: c.message });
        });
      }
    }
  });

  for (const mode of ["update", "first-preview"] as Mode[]) {
    it(`passes a warm pool on a single-template On-Demand group (${mode})`, async () => {
      // Prepare
      const rs = ingestFleetRecording();
      singleTemplate(rs);
      setInput(rs, F.group, "capacityRebalance", undefined);
      setInput(rs, F.group, "warmPool", warmPool);
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });
  }
});
