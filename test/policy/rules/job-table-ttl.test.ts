/** policy/rules/job-table-ttl.ts: a table tagged as a jobs table declares TTL (judged on its inputs). */
import type { RecordedResource } from "../../../policy/testing/types";
import { FU, fleetRecording, fleetResource } from "../helpers/fleet";
import { T, add, setInput, table, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "job-table-ttl";
const MODES: Mode[] = ["update", "first-preview"];

const pitr = { pointInTimeRecovery: { enabled: true }, serverSideEncryption: { enabled: true } };
const jobsTag = { "encache:table-role": "jobs" };

describe(POLICY, () => {
  for (const mode of MODES) {
    it(`${mode}: passes the good fleet recording (the jobs table expires records after expires_at)`, async () => {
      // Prepare
      const rs = fleetRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });
  }

  it("ignores a table without the jobs tag that no function reads as its jobs table, even when it has no TTL", async () => {
    // Prepare
    const rs = fleetRecording();
    add(
      rs,
      fleetResource(T.table, "fleet-cache", {
        hashKey: "k",
        attributes: [{ name: "k", type: "S" }],
        pointInTimeRecovery: { enabled: true },
        serverSideEncryption: { enabled: true },
        tags: { "encache:part": "fleet" },
      }),
    );
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a tagged jobs table with TTL", async () => {
      // Prepare
      const rs = [table("jobs", { ...pitr, ttl: { attributeName: "expires_at", enabled: true }, tags: jobsTag })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    for (const mode of MODES) {
      // On a first preview the `ttl` OUTPUT of a table that sets none is unknown (Optional+Computed):
      // the rule decides from the input.
      it(`${mode}: fails a tagged jobs table without TTL, at mandatory level`, async () => {
        // Prepare
        const rs = [table("jobs", { ...pitr, tags: jobsTag })];
        // Act
        const violations = await evaluate(rs, { mode });
        // Assess
        expectViolation(violations, {
          policy: POLICY,
          level: "mandatory",
          urn: urnOf(T.table, "jobs"),
          message: /Job table 'jobs' \(tag encache:table-role=jobs\) must expire its records/,
        });
      });
    }
  });

  describe("fails", () => {
    const cases: { title: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a jobs table without TTL",
        message: /Job table 'fleet-jobs' \(tag encache:table-role=jobs\) must expire its records/,
        mutate: (rs) => setInput(rs, FU.jobs, "ttl", undefined),
      },
      {
        title: "a jobs table with TTL disabled",
        message: /ttl.enabled/,
        mutate: (rs) => setInput(rs, FU.jobs, "ttl", { attributeName: "expires_at", enabled: false }),
      },
      {
        title: "a jobs table with TTL on no attribute",
        message: /ttl.attributeName/,
        mutate: (rs) => setInput(rs, FU.jobs, "ttl", { attributeName: "", enabled: true }),
      },
    ];
    for (const c of cases) {
      for (const mode of MODES) {
        it(`${mode}: ${c.title}`, async () => {
          // Prepare
          const rs = fleetRecording();
          c.mutate(rs);
          // Act
          const violations = await evaluate(rs, { mode });
          // Assess
          expectViolation(violations, { policy: POLICY, level: "mandatory", urn: FU.jobs, message: c.message });
        });
      }
    }
  });
});
