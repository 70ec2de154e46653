/** policy/rules/job-table-tagged.ts: a table a function is handed as its jobs table carries the jobs tag, so job-table-ttl holds it. */
import { FU, fleetRecording } from "../helpers/fleet";
import { T, fn, setInput, table, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "job-table-tagged";
const MODES: Mode[] = ["update", "first-preview"];

describe(POLICY, () => {
  for (const mode of MODES) {
    it(`${mode}: passes the good fleet recording (the jobs table is tagged)`, async () => {
      // Prepare
      const rs = fleetRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });

    // The env value (the table's name) is unknown on a first preview; its name and the edge are not.
    it(`${mode}: fails an untagged table handed to a function as RUNS_FLEET_JOBS_TABLE`, async () => {
      // Prepare
      const rs = [
        table("jobs", { pointInTimeRecovery: { enabled: true }, serverSideEncryption: { enabled: true } }),
        fn("runner", { environment: { variables: { RUNS_FLEET_JOBS_TABLE: "jobs" } } }, { deps: { environment: [urnOf(T.table, "jobs")] } }),
      ];
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.table, "jobs"),
        message: /Job table 'jobs' \(function 'runner' env RUNS_FLEET_JOBS_TABLE\) .* not tagged encache:table-role=jobs/,
      });
    });

    it(`${mode}: fails the fleet's jobs table when its tag AND its TTL are dropped (recognised by the function env that reads it)`, async () => {
      // Prepare
      const rs = fleetRecording();
      setInput(rs, FU.jobs, "ttl", undefined);
      setInput(rs, FU.jobs, "tags", { "encache:part": "fleet" });
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: FU.jobs,
        message: /function 'fleet-termination-consumer' env RUNS_FLEET_JOBS_TABLE/,
      });
    });
  }

  it("reads its env var names from config", async () => {
    // Prepare
    const rs = [
      table("jobs", { pointInTimeRecovery: { enabled: true }, serverSideEncryption: { enabled: true } }),
      fn("runner", { environment: { variables: { MY_JOBS: "jobs" } } }, { deps: { environment: [urnOf(T.table, "jobs")] } }),
    ];
    // Act
    const [defaults, configured] = await Promise.all([evaluate(rs), evaluate(rs, { config: { [POLICY]: { envKeys: ["MY_JOBS"] } } })]);
    // Assess
    expectNoViolations(defaults);
    expectViolation(configured, { policy: POLICY, level: "mandatory", urn: urnOf(T.table, "jobs"), message: /env MY_JOBS/ });
  });
});
