/** policy/rules/spot-group-capacity-rebalance.ts: a group that can run Spot rebalances before interruptions (issue 27). */
import type { RecordedResource } from "../../../policy/testing/types";
import { F, FT, ingestFleetRecording } from "../helpers/ingest-fleet";
import { T, editInput, find, launchTemplate, resource, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolationOf, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "spot-group-capacity-rebalance";

type Mixed = { instancesDistribution?: Record<string, unknown> };
const setDistribution = (rs: RecordedResource[], distribution: Record<string, unknown> | undefined) =>
  editInput<Mixed>(rs, F.group, "mixedInstancesPolicy", (m) => {
    if (distribution === undefined) delete m.instancesDistribution;
    else m.instancesDistribution = distribution;
  });

/** The group in the single-template form: `launchTemplate: { id, version }` from the stack's template, no mixed instances policy. */
function singleTemplate(rs: RecordedResource[]): void {
  setInput(rs, F.group, "mixedInstancesPolicy", undefined);
  setInput(rs, F.group, "launchTemplate", { id: "lt-0fleet0123456789", version: "$Latest" });
  const group = find(rs, F.group);
  delete group.propertyDependencies.mixedInstancesPolicy;
  group.propertyDependencies.launchTemplate = [F.launchTemplate];
}
const spotTemplate = (rs: RecordedResource[]) =>
  setInput(rs, F.launchTemplate, "instanceMarketOptions", { marketType: "spot", spotOptions: { spotInstanceType: "one-time" } });

const hardened = {
  metadataOptions: { httpTokens: "required" },
  networkInterfaces: [{ deviceIndex: 0, associatePublicIpAddress: "false" }],
  blockDeviceMappings: [{ deviceName: "/dev/sda1", ebs: { encrypted: "true" } }],
  monitoring: { enabled: true },
};

describe(POLICY, () => {
  for (const mode of ["update", "first-preview"] as Mode[]) {
    it(`passes the good ingest fleet-mode recording: all Spot above a zero base, capacityRebalance true (${mode})`, async () => {
      // Prepare
      const rs = ingestFleetRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });
  }

  describe("built in one line", () => {
    const group = urnOf(FT.group, "g");
    const withTemplate = (marketType?: string, inputs: Record<string, unknown> = {}) => [
      launchTemplate("lt", marketType ? { ...hardened, instanceMarketOptions: { marketType } } : hardened),
      resource(
        FT.group,
        "g",
        { minSize: 0, maxSize: 1, launchTemplate: { id: "lt-1" }, ...inputs },
        { deps: { launchTemplate: [urnOf(T.launchTemplate, "lt")] } },
      ),
    ];

    it("fails a group launching from a Spot template without capacityRebalance", async () => {
      // Prepare / Act
      const violations = await evaluate(withTemplate("spot"));
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: group,
        message:
          /^Auto Scaling group 'g' can run Spot \(launch template 'lt' requests Spot \(instanceMarketOptions\.marketType "spot"\)\) but does not set capacityRebalance: true/,
      });
    });

    it("passes the same group with capacityRebalance true, and an On-Demand template without it", async () => {
      // Prepare / Act
      const rebalanced = await evaluate(withTemplate("spot", { capacityRebalance: true }));
      const onDemand = await evaluate(withTemplate());
      // Assess
      expectNoViolationOf(rebalanced, POLICY);
      expectNoViolationOf(onDemand, POLICY);
    });
  });

  describe("fails", () => {
    const cases: { title: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "the Spot mixed group without capacityRebalance",
        message: /onDemandPercentageAboveBaseCapacity 0, so 100 % above the On-Demand base is Spot\) but does not set capacityRebalance: true/,
        mutate: (rs) => setInput(rs, F.group, "capacityRebalance", undefined),
      },
      {
        title: "the Spot mixed group with capacityRebalance false",
        message: /does not set capacityRebalance/,
        mutate: (rs) => setInput(rs, F.group, "capacityRebalance", false),
      },
      {
        title: "a mixed group half On-Demand above its base",
        message: /onDemandPercentageAboveBaseCapacity 50, so 50 % above the On-Demand base is Spot/,
        mutate: (rs) => {
          setDistribution(rs, { onDemandBaseCapacity: 1, onDemandPercentageAboveBaseCapacity: 50 });
          setInput(rs, F.group, "capacityRebalance", undefined);
        },
      },
      {
        title: "a mixed group at 99 % On-Demand, given as a string",
        message: /onDemandPercentageAboveBaseCapacity 99/,
        mutate: (rs) => {
          setDistribution(rs, { onDemandPercentageAboveBaseCapacity: "99" });
          setInput(rs, F.group, "capacityRebalance", undefined);
        },
      },
      {
        title: "a single-template group whose template (followed through the graph) requests Spot",
        message: /launch template 'ingest-gpu-lt' requests Spot/,
        mutate: (rs) => {
          singleTemplate(rs);
          spotTemplate(rs);
          setInput(rs, F.group, "capacityRebalance", undefined);
        },
      },
      {
        title: "an On-Demand mixed group whose template requests Spot",
        message: /\(launch template 'ingest-gpu-lt' requests Spot \(instanceMarketOptions\.marketType "spot"\)\)/,
        mutate: (rs) => {
          setDistribution(rs, { onDemandPercentageAboveBaseCapacity: 100 });
          spotTemplate(rs);
          setInput(rs, F.group, "capacityRebalance", undefined);
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

  describe("passes a group without capacityRebalance that runs On-Demand only", () => {
    const cases: { title: string; mutate: (rs: RecordedResource[]) => void }[] = [
      { title: "a mixed policy at 100 % On-Demand", mutate: (rs) => setDistribution(rs, { onDemandPercentageAboveBaseCapacity: 100 }) },
      { title: "a mixed policy without instancesDistribution (AWS's default: 100 % On-Demand)", mutate: (rs) => setDistribution(rs, undefined) },
      { title: "an instancesDistribution that leaves the percentage unset (default 100)", mutate: (rs) => setDistribution(rs, { onDemandBaseCapacity: 0 }) },
      { title: "a single template that does not request Spot", mutate: singleTemplate },
      {
        title: 'a template whose market type is not "spot"',
        mutate: (rs) => (singleTemplate(rs), setInput(rs, F.launchTemplate, "instanceMarketOptions", { marketType: "capacity-block" })),
      },
    ];
    for (const mode of ["update", "first-preview"] as Mode[]) {
      for (const c of cases) {
        it(`${c.title} (${mode})`, async () => {
          // Prepare
          const rs = ingestFleetRecording();
          c.mutate(rs);
          setInput(rs, F.group, "capacityRebalance", undefined);
          // Act
          const violations = await evaluate(rs, { mode });
          // Assess
          expectNoViolations(violations);
        });
      }
    }
  });
});
