/** policy/rules/job-table-ttl.ts: a table holding job records (by tag, or by the function env that reads it) expires them. */
import type { RecordedResource } from "../../../policy/testing/types";
import { FU, fleetRecording, fleetResource } from "../helpers/fleet";
import { T, add, fn, setInput, table, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "job-table-ttl";

const pitr = { pointInTimeRecovery: { enabled: true }, serverSideEncryption: { enabled: true } };

describe(POLICY, () => {
  it("passes the good fleet recording (the jobs table expires records after expires_at)", async () => {
    // Prepare
    const rs = fleetRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  it("ignores a table without the jobs marker even when it has no TTL", async () => {
    // Prepare
    const rs = fleetRecording();
    add(rs, fleetResource(T.table, "fleet-cache", { hashKey: "k", attributes: [{ name: "k", type: "S" }], pointInTimeRecovery: { enabled: true }, serverSideEncryption: { enabled: true }, tags: { "encache:part": "fleet" } }));
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a tagged jobs table with TTL", async () => {
      // Prepare
      const rs = [table("jobs", { ...pitr, ttl: { attributeName: "expires_at", enabled: true }, tags: { "encache:table-role": "jobs" } })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails an untagged table handed to a function as RUNS_FLEET_JOBS_TABLE, without TTL", async () => {
      // Prepare
      const rs = [table("jobs", pitr), fn("runner", { environment: { variables: { RUNS_FLEET_JOBS_TABLE: "jobs" } } }, { deps: { environment: [urnOf(T.table, "jobs")] } })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, { policy: POLICY, level: "mandatory", urn: urnOf(T.table, "jobs"), message: /Job table 'jobs' \(function 'runner' env RUNS_FLEET_JOBS_TABLE\)/ });
    });
  });

  describe("fails", () => {
    const cases: { title: string; message: RegExp; mode?: Mode; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a jobs table without TTL",
        message: /Job table 'fleet-jobs' \(tag encache:table-role=jobs\) must expire its records/,
        mutate: (rs) => setInput(rs, FU.jobs, "ttl", undefined),
      },
      {
        title: "a jobs table whose tag AND TTL are dropped (recognised by the function env that reads it)",
        message: /Job table 'fleet-jobs' \(function 'fleet-termination-consumer' env RUNS_FLEET_JOBS_TABLE\) must expire its records/,
        mutate: (rs) => {
          setInput(rs, FU.jobs, "ttl", undefined);
          setInput(rs, FU.jobs, "tags", { "encache:part": "fleet" });
        },
      },
      {
        title: "an untagged jobs table without TTL on a first preview (the env value, the table name, unknown in the model)",
        message: /env RUNS_FLEET_JOBS_TABLE/,
        mode: "first-preview",
        mutate: (rs) => {
          setInput(rs, FU.jobs, "ttl", undefined);
          setInput(rs, FU.jobs, "tags", { "encache:part": "fleet" });
        },
      },
      { title: "a jobs table with TTL disabled", message: /ttl.enabled/, mutate: (rs) => setInput(rs, FU.jobs, "ttl", { attributeName: "expires_at", enabled: false }) },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = fleetRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs, { mode: c.mode ?? "update" });
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: FU.jobs, message: c.message });
      });
    }
  });
});

