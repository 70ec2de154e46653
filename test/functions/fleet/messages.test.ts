import { expect } from "chai";
import { instanceIdOfParameter, runnerConfigParameter } from "../../../functions/fleet/jobs";
import { HousekeepingMessageSchema, parseBody, rfc3339, storableInDynamoDb, TerminationMessageSchema } from "../../../functions/fleet/messages";
import { terminationMessage } from "../helpers/fleet-deps";

describe("fleet messages", () => {
  it("accepts the seed's termination message and keeps an optional error", () => {
    const r = parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ error: "x" })));
    expect(r.ok && r.value).to.deep.include({ job_id: "67890", status: "success", error: "x" });
  });

  it("accepts the scheduler's housekeeping message with <aws.scheduler.scheduled-time> filled in, params defaulting to {}", () => {
    const r = parseBody(HousekeepingMessageSchema, JSON.stringify({ task_type: "stale_ssm", timestamp: "2025-11-25T10:00:00Z" }));
    expect(r).to.deep.equal({ ok: true, value: { task_type: "stale_ssm", timestamp: "2025-11-25T10:00:00Z", params: {} } });
  });

  // Found by test/fuzz (issue 16): these passed the schema, then UpdateItem refused the number
  // (ValidationException) on every receive, so the message went to the DLQ instead of quarantine.
  for (const duration of [5e-324, 1e-200, 1e200, 1e308]) {
    it(`refuses duration_seconds ${duration}, which DynamoDB cannot store, so the message is quarantined`, () => {
      // Act
      const r = parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ duration_seconds: duration })));
      // Assess
      expect(r.ok).to.equal(false);
      expect(!r.ok && r.reason).to.include("duration_seconds");
    });
  }

  it("still accepts durations of 0, fractions and days", () => {
    for (const duration of [0, -0, 0.001, 12.345, 86_400 * 30])
      expect(parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ duration_seconds: duration }))).ok, String(duration)).to.equal(true);
  });

  it("rfc3339 drops milliseconds so stored timestamps compare lexically", () => {
    expect(rfc3339(new Date("2025-11-25T10:02:03.456+01:00"))).to.equal("2025-11-25T09:02:03Z");
  });

  const names: Array<[string, string | null]> = [
    ["/runs-fleet/dev/runners/i-0123456789abcdef0/config", "i-0123456789abcdef0"],
    ["/runs-fleet/dev/runners/i-01234567/token", "i-01234567"],
    ["/runs-fleet/dev/runners/README", null],
    ["/runs-fleet/dev/runners/host-1/config", null],
    ["/other/i-0123456789abcdef0/config", null],
  ];
  for (const [name, id] of names) {
    it(`instanceIdOfParameter(${name}) = ${id}`, () => {
      expect(instanceIdOfParameter("/runs-fleet/dev/runners", name)).to.equal(id);
    });
  }

  it("runnerConfigParameter is the seed's path under the configured root", () => {
    expect(runnerConfigParameter("/runs-fleet/dev/runners", "i-1")).to.equal("/runs-fleet/dev/runners/i-1/config");
    expect(runnerConfigParameter("/encache-dev/runners", "i-1")).to.equal("/encache-dev/runners/i-1/config");
  });

  it("instanceIdOfParameter only matches under the configured root", () => {
    expect(instanceIdOfParameter("/encache-dev/runners", "/encache-dev/runners/i-0123456789abcdef0/config")).to.equal("i-0123456789abcdef0");
    expect(instanceIdOfParameter("/encache-dev/runners", "/runs-fleet/dev/runners/i-0123456789abcdef0/config")).to.equal(null);
  });

  describe("DynamoDB's number range bounds duration_seconds: 1e-130 is storable, 1e126 is not", () => {
    const cases: Array<[number, boolean]> = [
      [1e-130, true],
      [9.99e-131, false],
      [9.99e125, true],
      [1e126, false],
      [-1e-130, true],
      [-1e126, false],
    ];
    for (const [n, storable] of cases) {
      it(`storableInDynamoDb(${n}) is ${storable}`, () => {
        expect(storableInDynamoDb(n)).to.equal(storable);
      });
    }
  });

  it("names DynamoDB's number range when it refuses a duration", () => {
    // Act
    const r = parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ duration_seconds: 1e200 })));
    // Assess
    expect(!r.ok && r.reason).to.equal("schema: duration_seconds: must be 0, or between 1e-130 and 1e126 (DynamoDB's number range)");
  });

  it("accepts timestamps with a UTC offset as well as Z, as the agent writes RFC 3339", () => {
    const r = parseBody(
      TerminationMessageSchema,
      JSON.stringify(terminationMessage({ started_at: "2025-11-25T11:00:00+01:00", completed_at: "2025-11-25T06:02:03-05:00" })),
    );
    expect(r.ok).to.equal(true);
  });

  it("a timestamp without a zone is refused with the reason the quarantine carries", () => {
    const r = parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ completed_at: "2025-11-25T10:02:03" })));
    expect(!r.ok && r.reason).to.equal("schema: completed_at: must be an ISO 8601 timestamp with a zone");
  });

  for (const bad of ["xi-0123456789abcdef0", "i-0123456789abcdef0/config", "host/i-01234567"]) {
    it(`refuses the instance id ${JSON.stringify(bad)}: the whole value must be an instance id`, () => {
      const r = parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ instance_id: bad })));
      expect(!r.ok && r.reason).to.equal("schema: instance_id: must be an EC2 instance id (i-…)");
    });
  }

  it("a body that is not an object is refused as a whole: the reason names the body", () => {
    const r = parseBody(TerminationMessageSchema, "null");
    expect(!r.ok && r.reason).to.match(/^schema: body: /);
  });

  it("a job id in the sweeps' cursor key space is refused: the jobs table keeps cursors there", () => {
    const r = parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ job_id: "housekeeping-cursor#orphaned_instances" })));
    expect(!r.ok && r.reason).to.equal("schema: job_id: must not start with housekeeping-cursor# (the sweeps' cursor items)");
    const ok = parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ job_id: "job-housekeeping-cursor#1" })));
    expect(ok.ok).to.equal(true);
  });

  it("the reason names every offending field, separated by semicolons", () => {
    const r = parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ job_id: "", exit_code: 1.5 })));
    expect(!r.ok && r.reason).to.match(/^schema: job_id: [^;]+; exit_code: [^;]+$/);
  });

  it("instanceIdOfParameter: a sibling path of the same length is not under the root", () => {
    expect(instanceIdOfParameter("/encache-dev/runners", "/encache-prd/runners/i-0123456789abcdef0/config")).to.equal(null);
    expect(instanceIdOfParameter("/runs-fleet/dev/runners", "/runs-fleet/dev/runnersX/i-0123456789abcdef0/config")).to.equal(null);
  });

  it("instanceIdOfParameter: the id must be the whole first segment under the root", () => {
    expect(instanceIdOfParameter("/runs-fleet/dev/runners", "/runs-fleet/dev/runners/host-i-0123456789abcdef0/config")).to.equal(null);
  });
});
