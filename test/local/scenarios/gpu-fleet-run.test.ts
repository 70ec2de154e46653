/**
 * What the GPU fleet's scenarios share (local/scenarios/gpu-fleet-run.ts): the fleet's settings from
 * the recording, the cost table, an instance's billed life and a burst's bodies; and
 * `unavailableReason` (local/scenarios/scenario.ts), which decides whether a scenario can run on the
 * platform's GPU mode.
 */
import { expect } from "chai";
import { sampleEnv } from "../../functions/helpers/env-samples";
import { ON_DEMAND_USD_PER_HOUR, SPOT_DISCOUNT } from "../../../local/prices";
import type { LocalFleet, Topology } from "../../../local/provision/topology-types";
import { burstBodies, costTable, fleetSettings, SCALER_FUNCTION, SCALER_SCHEDULE, simSecondsOf } from "../../../local/scenarios/gpu-fleet-run";
import { unavailableReason } from "../../../local/scenarios/scenario";
import { breakerSpan, launchesBetween, metricSum } from "../../../local/scenarios/gpu-spot-interruption";

describe("GPU fleet scenarios: shared parts", () => {
  describe("unavailableReason", () => {
    const has = (over: Partial<{ queues: string[]; gpuInstance: boolean; gpuFleet: boolean }> = {}) => ({
      queues: ["ingest", "ingest-dlq"],
      gpuInstance: false,
      gpuFleet: false,
      ...over,
    });
    const cases: Array<{
      name: string;
      scenario: { requires: string[]; gpuMode?: "instance" | "fleet" };
      has: ReturnType<typeof has>;
      want: RegExp | undefined;
    }> = [
      { name: "runs with its queues and no GPU mode", scenario: { requires: ["ingest"] }, has: has(), want: undefined },
      {
        name: "names every missing queue",
        scenario: { requires: ["ingest", "pool-claims", "fleet-jobs"] },
        has: has(),
        want: /^the program declares no pool-claims, fleet-jobs$/,
      },
      {
        name: "a missing queue comes before the GPU mode",
        scenario: { requires: ["pool-claims"], gpuMode: "fleet" },
        has: has(),
        want: /^the program declares no pool-claims$/,
      },
      { name: "a fleet scenario on a fleet", scenario: { requires: ["ingest"], gpuMode: "fleet" }, has: has({ gpuFleet: true }), want: undefined },
      {
        name: "a fleet scenario on one GPU instance",
        scenario: { requires: ["ingest"], gpuMode: "fleet" },
        has: has({ gpuInstance: true }),
        want: /needs the GPU fleet .*this stack runs one GPU instance/,
      },
      {
        name: "an instance scenario on one GPU instance",
        scenario: { requires: ["ingest"], gpuMode: "instance" },
        has: has({ gpuInstance: true }),
        want: undefined,
      },
      {
        name: "an instance scenario on a fleet",
        scenario: { requires: ["ingest"], gpuMode: "instance" },
        has: has({ gpuFleet: true }),
        want: /needs one GPU instance .*this stack runs a GPU fleet/,
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        // Prepare: the table row. Act
        const reason = unavailableReason(c.scenario, c.has);
        // Assess
        if (c.want === undefined) expect(reason).to.equal(undefined);
        else expect(reason).to.match(c.want);
      });
    }
  });

  describe("fleetSettings: from the recording, never the stack file", () => {
    /** A recording of fleet mode, as deployLocally reads it: the group, the scaler's function and its schedule. */
    const recorded = (
      over: { env?: Record<string, string>; fleet?: Partial<LocalFleet>; rate?: string } = {},
    ): Pick<Topology, "fleets" | "functions" | "schedules"> => ({
      fleets: [
        {
          urn: "urn:group",
          logicalName: "ingest-gpu-fleet",
          groupName: "encache-gpu-fleet-prod",
          maxSize: 4,
          instanceType: "g6.2xlarge",
          warmPoolMinSize: 0,
          drainHookSeconds: 90,
          loadBalancer: {
            dnsName: "lb",
            port: 80,
            healthCheck: { path: "/status", intervalSeconds: 5, healthyThreshold: 2, unhealthyThreshold: 2, timeoutSeconds: 2 },
          },
          ...over.fleet,
        },
      ],
      functions: [
        {
          urn: "urn:scaler",
          logicalName: SCALER_FUNCTION,
          name: "ingest-gpu-scaler-1234567",
          arn: "arn:aws:lambda:us-east-1:123456789012:function:ingest-gpu-scaler-1234567",
          codePath: "/dev/null",
          handler: "index.handler",
          environment: { ...sampleEnv("ingest GPU fleet scaler"), ...over.env },
          timeoutSeconds: 30,
          memoryMb: 256,
        },
      ],
      schedules: [
        {
          urn: "urn:schedule",
          logicalName: SCALER_SCHEDULE,
          name: "ingest-gpu-scaler-check-1234567",
          expression: over.rate ?? "rate(2 minutes)",
          enabled: true,
          target: { arn: "arn:aws:sqs:us-east-1:123456789012:q", maximumRetryAttempts: 0, maximumEventAgeInSeconds: 60 },
        },
      ],
    });

    it("reads the group's size and type, the scaler's environment and its schedule's rate, and prices them from the local table (Spot at its discount)", () => {
      // Act
      const settings = fleetSettings(recorded());
      // Assess
      expect(settings).to.deep.equal({
        maxSize: 4,
        idleStopMinutes: 30,
        scaleCheckMinutes: 2,
        scaleInCooldownSeconds: 600,
        instanceType: "g6.2xlarge",
        usdPerHour: ON_DEMAND_USD_PER_HOUR,
        spotDiscount: SPOT_DISCOUNT,
        spotPercent: 75,
        spotBreaker: { interruptions: 2, windowMinutes: 15, cooldownMinutes: 30 },
      });
    });

    it("no discount for an on-demand fleet (GPU_FLEET_SPOT_PERCENT 0)", () => {
      expect(fleetSettings(recorded({ env: { GPU_FLEET_SPOT_PERCENT: "0" }, rate: "rate(1 minute)" }))).to.deep.include({
        spotDiscount: 0,
        spotPercent: 0,
        scaleCheckMinutes: 1,
      });
    });

    it("refuses a recording without a fleet (a stack in instance mode)", () => {
      expect(() => fleetSettings({ ...recorded(), fleets: [] })).to.throw(/runs one GPU instance \(gpu.capacity.mode instance\)/);
    });
  });

  describe("simSecondsOf", () => {
    const cases = [
      { name: "launch to gone, at speed 60", r: { launchedAtMs: 1_000, goneAtMs: 3_000 }, nowMs: 99_000, speed: 60, want: 120 },
      { name: "still running: launch to now", r: { launchedAtMs: 1_000, goneAtMs: null }, nowMs: 2_500, speed: 60, want: 90 },
      { name: "speed 1: real seconds", r: { launchedAtMs: 0, goneAtMs: 4_500 }, nowMs: 0, speed: 1, want: 4.5 },
    ];
    for (const c of cases) {
      it(c.name, () => {
        // Prepare: the table row. Act
        const s = simSecondsOf(c.r, c.nowMs, c.speed);
        // Assess
        expect(s).to.equal(c.want);
      });
    }
  });

  describe("costTable", () => {
    const settings = { instanceType: "g5.2xlarge", usdPerHour: { "g5.2xlarge": 1.2, "g6.2xlarge": 1.0 }, spotDiscount: 0.6 };

    it("prices the fleet (Spot at the discount), one GPU, and an always-on GPU for the span and a day", () => {
      // Prepare: one on-demand hour, two Spot half-hours.
      const lives = [
        { instanceType: "g5.2xlarge", market: "on-demand" as const, simSeconds: 3600 },
        { instanceType: "g5.2xlarge", market: "spot" as const, simSeconds: 1800 },
        { instanceType: "g6.2xlarge", market: "spot" as const, simSeconds: 1800 },
      ];
      // Act
      const table = costTable({ lives, oneGpuSimSeconds: 7200, spanSimSeconds: 5400, settings });
      // Assess: 1.2 + 0.5 × 1.2 × 0.4 + 0.5 × 1.0 × 0.4 = 1.64.
      expect(table.rows.map((r) => [r.instanceHours, r.usd])).to.deep.equal([
        [2, 1.64],
        [2, 2.4],
        [1.5, 1.8],
        [24, 28.8],
      ]);
      expect(table.unpriced).to.deep.equal([]);
      expect(table.savedPerDayUsd).to.equal(27.16);
    });

    it("leaves the fleet's cost and the saving null when a life's type has no price, and lists the type", () => {
      // Prepare
      const lives = [
        { instanceType: "g5.2xlarge", market: "on-demand" as const, simSeconds: 3600 },
        { instanceType: "g9.xlarge", market: "spot" as const, simSeconds: 3600 },
      ];
      // Act
      const table = costTable({ lives, oneGpuSimSeconds: 3600, spanSimSeconds: 3600, settings });
      // Assess
      expect(table.rows[0]).to.deep.include({ instanceHours: 2, usd: null });
      expect(table.rows.slice(1).map((r) => r.usd)).to.deep.equal([1.2, 1.2, 28.8]);
      expect(table.unpriced).to.deep.equal(["g9.xlarge"]);
      expect(table.savedPerDayUsd).to.equal(null);
    });

    it("leaves every on-demand figure null when the fleet's own type has no price", () => {
      // Prepare
      const unpricedSettings = { ...settings, instanceType: "g4dn.xlarge" };
      const lives = [{ instanceType: "g5.2xlarge", market: "on-demand" as const, simSeconds: 3600 }];
      // Act
      const table = costTable({ lives, oneGpuSimSeconds: 3600, spanSimSeconds: 3600, settings: unpricedSettings });
      // Assess
      expect(table.rows.map((r) => r.usd)).to.deep.equal([1.2, null, null, null]);
      expect(table.unpriced).to.deep.equal(["g4dn.xlarge"]);
      expect(table.savedPerDayUsd).to.equal(null);
    });
    it("lists an unpriced type once when both a life and the fleet's own type lack a price", () => {
      // Prepare
      const unpricedSettings = { ...settings, instanceType: "g4dn.xlarge" };
      const lives = [{ instanceType: "g4dn.xlarge", market: "on-demand" as const, simSeconds: 3600 }];
      // Act
      const table = costTable({ lives, oneGpuSimSeconds: 3600, spanSimSeconds: 3600, settings: unpricedSettings });
      // Assess
      expect(table.unpriced).to.deep.equal(["g4dn.xlarge"]);
    });
  });

  describe("burstBodies", () => {
    it("gives n windows of one session with distinct indexes 0…n-1", () => {
      // Prepare, Act
      const bodies = burstBodies("sess-1", 3).map((b) => JSON.parse(b) as Record<string, unknown>);
      // Assess
      expect(bodies).to.deep.equal([0, 1, 2].map((windowIndex) => ({ sessionId: "sess-1", userId: "local-user", windowIndex, frameCount: 30 })));
    });

    it("gives none for n = 0", () => {
      // Prepare, Act, Assess
      expect(burstBodies("s", 0)).to.deep.equal([]);
    });
  });

  describe("gpu-spot-interruption's breaker accounting", () => {
    const mix = (onDemandPercentageAboveBaseCapacity: number) => ({
      onDemandBaseCapacity: 1,
      onDemandPercentageAboveBaseCapacity,
      instanceTypes: ["g5.2xlarge"],
    });

    it("breakerSpan: the first change to 100 % on demand from the second interruption on, to the next change away", () => {
      const cases: Array<[string, Array<{ atMs: number; distribution: ReturnType<typeof mix> }>, ReturnType<typeof breakerSpan>]> = [
        ["no change", [], null],
        ["opened, still open", [{ atMs: 10, distribution: mix(100) }], { openedAtMs: 10, closedAtMs: null }],
        [
          "opened and closed",
          [
            { atMs: 10, distribution: mix(100) },
            { atMs: 40, distribution: mix(25) },
          ],
          { openedAtMs: 10, closedAtMs: 40 },
        ],
        [
          "an earlier change before the interruption does not count",
          [
            { atMs: 1, distribution: mix(100) },
            { atMs: 2, distribution: mix(25) },
          ],
          null,
        ],
      ];
      for (const [label, changes, want] of cases) expect(breakerSpan(changes, 5), label).to.deep.equal(want);
    });

    it("launchesBetween counts each market's launches in the span, its end excluded", () => {
      const records = [
        { launchedAtMs: 5, market: "spot" as const },
        { launchedAtMs: 10, market: "on-demand" as const },
        { launchedAtMs: 20, market: "on-demand" as const },
        { launchedAtMs: 40, market: "spot" as const },
      ];
      expect(launchesBetween(records, 10, 40)).to.deep.equal({ spot: 0, onDemand: 2 });
    });

    it("metricSum adds an EMF metric over a function's lines, skipping the others", () => {
      const lines = [
        { _aws: { Timestamp: 1 }, SpotBreakerTrips: 1, SpotInterruptions: 1 },
        { step: "spot_breaker_opened", SpotBreakerTrips: 7 },
        { _aws: { Timestamp: 2 }, SpotInterruptions: 1 },
      ];
      expect([metricSum(lines, "SpotBreakerTrips"), metricSum(lines, "SpotInterruptions")]).to.deep.equal([1, 2]);
    });
  });
});
