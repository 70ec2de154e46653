import { DescribeInstancesCommand, type InstanceStateName } from "@aws-sdk/client-ec2";
import { DeleteParametersCommand, GetParametersByPathCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { staleSsm } from "../../../../functions/fleet/tasks/stale-ssm";
import { awsError } from "../../helpers/fleet-deps";
import { ec2Fleet } from "../../helpers/fleet-fakes";
import { activeJobs, unlimited, budgetOf, harness, minutesAgo, id } from "../../helpers/fleet-tasks";

describe("housekeeping task stale_ssm", () => {
  const param = (n: number, ageMinutes = 60) => ({ Name: `/runs-fleet/dev/runners/${id(n)}/config`, LastModifiedDate: minutesAgo(ageMinutes) });
  const names = (ns: number[]) => ns.map((n) => param(n).Name);
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

  /**
   * The runner path as SSM serves it: GetParametersByPath pages `size` at a time chained by a
   * NextToken that is either a cursor after the last name returned (`key`) or an index into the
   * current listing (`offset`, as moto's, which deletions shift); DeleteParameters removes.
   */
  function ssmPath(t: ReturnType<typeof harness>, params: Array<{ Name: string; LastModifiedDate: Date }>, token: "key" | "offset" = "key", size = 10) {
    const store = [...params].sort((x, y) => (x.Name < y.Name ? -1 : 1));
    t.ssmMock.on(GetParametersByPathCommand).callsFake((input: { NextToken?: string }) => {
      const after = input.NextToken;
      let start = after === undefined ? 0 : token === "offset" ? Number(after) : store.findIndex((p) => p.Name > after);
      if (start < 0) start = store.length;
      const page = store.slice(start, start + size);
      const more = start + size < store.length;
      return { Parameters: page, NextToken: more ? (token === "offset" ? String(start + size) : page.at(-1)!.Name) : undefined };
    });
    t.ssmMock.on(DeleteParametersCommand).callsFake((input: { Names: string[] }) => {
      const hit = input.Names.filter((n) => store.some((p) => p.Name === n));
      for (const n of hit)
        store.splice(
          store.findIndex((p) => p.Name === n),
          1,
        );
      return { DeletedParameters: hit, InvalidParameters: input.Names.filter((n) => !hit.includes(n)) };
    });
    return store;
  }

  /** EC2 knows the `live` instances (running unless a state is given) and answers by the filter sent. */
  function liveEc2(t: ReturnType<typeof harness>, live: Array<{ n: number; state?: string }>): void {
    ec2Fleet(
      t.ec2Mock,
      live.map((l) => ({ InstanceId: id(l.n), State: { Name: (l.state ?? "running") as InstanceStateName } })),
    );
  }

  const deletedNames = (t: ReturnType<typeof harness>) => t.ssmMock.commandCalls(DeleteParametersCommand).map((c) => c.args[0].input.Names ?? []);

  it("pages through the path 10 at a time, deleting each page's parameters of gone or terminated instances, then confirms with a pass that deletes nothing", async () => {
    const t = harness();
    const store = ssmPath(
      t,
      range(1, 25).map((n) => param(n)),
    );
    liveEc2(t, [{ n: 1 }, { n: 2, state: "terminated" }, { n: 3, state: "stopped" }]);

    const result = await staleSsm(t.deps, {}, unlimited);

    const listCalls = t.ssmMock.commandCalls(GetParametersByPathCommand).map((c) => c.args[0].input);
    expect(listCalls).to.have.length(4);
    expect(listCalls[0]).to.deep.include({ Path: "/runs-fleet/dev/runners", Recursive: true, MaxResults: 10, WithDecryption: false });
    // Page 1 keeps the running (1) and stopped (3) instances' parameters.
    expect(deletedNames(t).map((d) => d.length)).to.deep.equal([8, 10, 5]);
    expect(store.map((p) => p.Name)).to.deep.equal(names([1, 3]));
    // The confirming pass re-lists but does not re-describe instances already found live.
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(3);
    expect(result).to.deep.include({ complete: true, listed: 27, stale: 23, deleted: 23, passes: 2 });
    expect(t.metrics.named("SSMParametersDeleted")[0]?.value).to.equal(23);
  });

  it("with an offset NextToken that deletions shift (moto's), later passes pick up what a pass skipped", async () => {
    const t = harness();
    const store = ssmPath(
      t,
      range(1, 30).map((n) => param(n)),
      "offset",
    );
    liveEc2(t, []);

    const result = await staleSsm(t.deps, {}, unlimited);

    expect(store).to.deep.equal([]);
    expect(deletedNames(t)).to.deep.equal([names(range(1, 10)), names(range(21, 30)), names(range(11, 20))]);
    expect(result).to.deep.include({ complete: true, deleted: 30, passes: 3 });
  });

  it("leaves parameters younger than the minimum age, and names that are not runner configs", async () => {
    const t = harness({ ssmMinAgeMinutes: 15 });
    ssmPath(t, [param(1, 5), { Name: "/runs-fleet/dev/runners/README", LastModifiedDate: minutesAgo(600) }, param(2, 16)]);
    liveEc2(t, []);

    const result = await staleSsm(t.deps, {}, unlimited);

    expect(deletedNames(t).flat()).to.deep.equal([param(2).Name]);
    expect(result).to.deep.include({ complete: true, deleted: 1 });
  });

  it("a DescribeInstances batch that fails keeps its parameters and does not abort the task", async () => {
    const t = harness();
    const store = ssmPath(
      t,
      range(1, 150).map((n) => param(n)),
    );
    t.ec2Mock.on(DescribeInstancesCommand).rejectsOnce(awsError("InvalidInstanceID.NotFound")).resolves({ Reservations: [] });

    const result = await staleSsm(t.deps, {}, unlimited);

    // One DescribeInstances per listed page; the failed one keeps its page's 10 parameters.
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(15);
    expect(store.map((p) => p.Name)).to.deep.equal(names(range(1, 10)));
    expect(result).to.deep.include({ complete: true, deleted: 140 });
    expect(t.logger.steps()).to.include("stale_ssm_describe_failed");
  });

  it("counts only what SSM reports deleted (InvalidParameters were already gone)", async () => {
    const t = harness();
    const store = ssmPath(t, [param(1), param(2)]);
    liveEc2(t, []);
    t.ssmMock.on(DeleteParametersCommand).callsFake(() => {
      store.splice(0, store.length);
      return { DeletedParameters: [param(1).Name], InvalidParameters: [param(2).Name] };
    });

    const result = await staleSsm(t.deps, {}, unlimited);

    expect(result).to.deep.include({ complete: true, deleted: 1 });
  });

  it("a budget that allows only one page still deletes that page's stale parameters, then stops incomplete", async () => {
    const t = harness();
    const store = ssmPath(
      t,
      range(1, 30).map((n) => param(n)),
    );
    liveEc2(t, [{ n: 4 }]);

    const result = await staleSsm(t.deps, {}, budgetOf(0));

    expect(t.ssmMock.commandCalls(GetParametersByPathCommand)).to.have.length(1);
    expect(deletedNames(t).flat()).to.deep.equal(names(range(1, 10).filter((n) => n !== 4)));
    expect(store).to.have.length(21);
    expect(result).to.deep.include({ complete: false, listed: 10, stale: 9, deleted: 9 });
    expect(t.metrics.named("SSMParametersDeleted")[0]?.value).to.equal(9);
  });

  describe("a listing slower than the whole budget (every run out of time after its first page)", () => {
    const spent = { exhausted: () => true };
    // An offset token (moto's) skips what deletions shift under it; the pass after it, from the top, picks that up.
    const cases = [
      { token: "key" as const, runs: 4, resumed: [false, true, true, true] },
      { token: "offset" as const, runs: 5, resumed: [false, true, true, false, true] },
    ];
    for (const { token, runs, resumed } of cases) {
      it(`with a ${token} NextToken: sweeps the whole path within ${runs} runs (35 parameters, 10 a page), though its first page (live runners) never changes`, async () => {
        // Prepare: 10 live runners' configs sort first; 25 stale ones after them; the cursor items live in the jobs table.
        const t = harness();
        const store = ssmPath(
          t,
          [...range(1, 10), ...range(100, 124)].map((n) => param(n)),
          token,
        );
        liveEc2(
          t,
          range(1, 10).map((n) => ({ n })),
        );
        const table = activeJobs(t, []);
        // Act
        const results = [];
        for (let run = 0; run < runs; run++) results.push(await staleSsm(t.deps, {}, spent));
        // Assess: only the live runners' configs are left, and each run after the first resumed.
        expect(store.map((p) => p.Name)).to.deep.equal(names(range(1, 10)));
        expect(results.map((r) => r.resumed)).to.deep.equal(resumed);
        expect([...table.cursors.keys()]).to.deep.equal(["housekeeping-cursor#stale_ssm"]);
      });
    }

    it("a cursor SSM refuses (an expired token) is logged and the run starts from the top", async () => {
      // Prepare
      const t = harness();
      ssmPath(t, [param(1)]);
      liveEc2(t, []);
      const table = activeJobs(t, []);
      table.cursors.set("housekeeping-cursor#stale_ssm", {
        query: { S: "/runs-fleet/dev/runners" },
        position: { S: "expired" },
        expires_at: { N: String(Math.floor(Date.now() / 1000) + 3600) },
      });
      t.ssmMock.on(GetParametersByPathCommand, { NextToken: "expired" }).rejects(awsError("ValidationException", "invalid NextToken"));
      // Act
      const result = await staleSsm(t.deps, {}, unlimited);
      // Assess
      expect(t.logger.withStep("sweep_cursor_rejected").map((e) => e.fields)).to.deep.equal([
        { step: "sweep_cursor_rejected", task_type: "stale_ssm", error: "ValidationException: invalid NextToken" },
      ]);
      // The refused listing is no pass: one from the top that deleted, one that confirmed.
      expect(result).to.deep.include({ complete: true, resumed: true, deleted: 1, passes: 2 });
    });

    /** The runner path of `count` parameters, with a live cursor saved at `position`. */
    function resumedAt(position: string, count = 25) {
      const t = harness();
      const store = ssmPath(
        t,
        range(1, count).map((n) => param(n)),
      );
      const table = activeJobs(t, []);
      table.cursors.set("housekeeping-cursor#stale_ssm", {
        query: { S: "/runs-fleet/dev/runners" },
        position: { S: position },
        expires_at: { N: String(Math.floor(Date.now() / 1000) + 3600) },
      });
      return { t, store, table };
    }
    const listedTokens = (t: ReturnType<typeof harness>) => t.ssmMock.commandCalls(GetParametersByPathCommand).map((c) => c.args[0].input.NextToken);

    it("a resumed run whose later page fails fails the run: the token that failed was not the saved one", async () => {
      // Prepare: the cursor at the second page; SSM fails the third.
      const { t, table } = resumedAt(param(10).Name);
      liveEc2(
        t,
        range(1, 25).map((n) => ({ n })),
      );
      t.ssmMock.on(GetParametersByPathCommand, { NextToken: param(20).Name }).rejects(awsError("InternalServerError", "SSM is failing"));
      // Act
      const failure = await staleSsm(t.deps, {}, unlimited).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess
      expect(failure).to.be.instanceOf(Error).with.property("message", "SSM is failing");
      // (The paginator re-uses one input object for its pages, so the calls show its last token.)
      expect(listedTokens(t)).to.have.length(2);
      expect(t.logger.withStep("sweep_cursor_rejected")).to.deep.equal([]);
      expect(table.cursors.get("housekeeping-cursor#stale_ssm")?.["position"]).to.deep.equal({ S: param(20).Name });
    });

    it("a saved token refused and SSM failing from the top too fails the run after one restart", async () => {
      // Prepare
      const { t } = resumedAt("expired");
      liveEc2(t, []);
      t.ssmMock.on(GetParametersByPathCommand).rejects(awsError("InternalServerError", "SSM is failing"));
      // Act
      const failure = await staleSsm(t.deps, {}, unlimited).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess
      expect(failure).to.be.instanceOf(Error).with.property("message", "SSM is failing");
      expect(listedTokens(t)).to.deep.equal(["expired", undefined]);
      expect(t.logger.withStep("sweep_cursor_rejected")).to.have.length(1);
    });

    it("a listing that fails from the top, with no cursor, fails the run at once: nothing to fall back to", async () => {
      // Prepare
      const t = harness();
      activeJobs(t, []);
      t.ssmMock.on(GetParametersByPathCommand).rejects(awsError("InternalServerError", "SSM is failing"));
      // Act
      const failure = await staleSsm(t.deps, {}, unlimited).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess
      expect(failure).to.be.instanceOf(Error).with.property("message", "SSM is failing");
      expect(listedTokens(t)).to.deep.equal([undefined]);
      expect(t.logger.withStep("sweep_cursor_rejected")).to.deep.equal([]);
    });

    it("a resumed pass that deletes nothing does not make the run complete: the pages before the cursor are swept from the top", async () => {
      // Prepare: the cursor after the first page; the first page's instances are gone, the rest live.
      const { t, store } = resumedAt(param(10).Name, 15);
      liveEc2(
        t,
        range(11, 15).map((n) => ({ n })),
      );
      // Act
      const result = await staleSsm(t.deps, {}, unlimited);
      // Assess
      expect(listedTokens(t)).to.have.length(4);
      expect(store.map((p) => p.Name)).to.deep.equal(names(range(11, 15)));
      expect(result).to.deep.include({ complete: true, resumed: true, deleted: 10, passes: 3 });
    });
  });

  it("a pass from the top whose only page deletes nothing is complete, even with the budget spent on that page", async () => {
    // Prepare
    const t = harness();
    ssmPath(t, [param(1), param(2)]);
    liveEc2(t, [{ n: 1 }, { n: 2 }]);
    const table = activeJobs(t, []);
    // Act
    const result = await staleSsm(t.deps, {}, { exhausted: () => true });
    // Assess
    expect(result).to.deep.include({ complete: true, resumed: false, deleted: 0, passes: 1 });
    expect(table.cursors.get("housekeeping-cursor#stale_ssm")?.["position"]).to.equal(undefined);
  });

  it("a parameter exactly the minimum age is old enough to judge", async () => {
    // Prepare
    const t = harness({ ssmMinAgeMinutes: 15 });
    ssmPath(t, [param(1, 15), param(2, 14)]);
    liveEc2(t, []);
    // Act
    await staleSsm(t.deps, {}, unlimited);
    // Assess
    expect(deletedNames(t).flat()).to.deep.equal([param(1).Name]);
  });

  it("params.min_age_minutes overrides the configured minimum age", async () => {
    // Prepare
    const t = harness({ ssmMinAgeMinutes: 15 });
    ssmPath(t, [param(1, 5), param(2, 1)]);
    liveEc2(t, []);
    // Act
    await staleSsm(t.deps, { min_age_minutes: 3 }, unlimited);
    // Assess
    expect(deletedNames(t).flat()).to.deep.equal([param(1).Name]);
  });

  it("logs a failed DescribeInstances batch with its instance ids and the error", async () => {
    // Prepare
    const t = harness();
    ssmPath(t, [param(1), param(2)]);
    t.ec2Mock.on(DescribeInstancesCommand).rejects(awsError("RequestLimitExceeded", "Request limit exceeded."));
    // Act
    await staleSsm(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.withStep("stale_ssm_describe_failed").map((e) => e.fields)).to.deep.equal([
      { step: "stale_ssm_describe_failed", instance_ids: [id(1), id(2)], error: "RequestLimitExceeded: Request limit exceeded." },
    ]);
    expect(deletedNames(t)).to.deep.equal([]);
  });

  it("logs each delete call's deleted and already-gone names", async () => {
    // Prepare: two pages; SSM reports parameter 2 already gone, then answers the second call with neither list.
    const t = harness();
    const store = ssmPath(t, [param(1), param(2), param(3)], "key", 2);
    liveEc2(t, []);
    t.ssmMock.on(DeleteParametersCommand).callsFake((input: { Names: string[] }) => {
      store.splice(0, store.length, ...store.filter((p) => !input.Names.includes(p.Name)));
      return input.Names.includes(param(1).Name) ? { DeletedParameters: [param(1).Name], InvalidParameters: [param(2).Name] } : {};
    });
    // Act
    await staleSsm(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.withStep("stale_ssm_parameters_deleted").map((e) => e.fields)).to.deep.equal([
      { step: "stale_ssm_parameters_deleted", parameters: [param(1).Name], already_gone: [param(2).Name] },
      { step: "stale_ssm_parameters_deleted", parameters: [], already_gone: [] },
    ]);
  });

  it("stops after 10 passes when every pass still finds stale parameters, and reports incomplete", async () => {
    // Prepare: deletes are acknowledged but the parameter keeps being listed (a replica lagging behind, say).
    const t = harness();
    ssmPath(t, [param(1)]);
    liveEc2(t, []);
    t.ssmMock.on(DeleteParametersCommand).resolves({ DeletedParameters: [param(1).Name] });
    // Act
    const result = await staleSsm(t.deps, {}, unlimited);
    // Assess
    expect(t.ssmMock.commandCalls(GetParametersByPathCommand)).to.have.length(10);
    expect(result).to.deep.include({ complete: false, passes: 10, stale: 10, deleted: 10 });
  });

  it("an empty path (a page without Parameters) lists nothing and is complete after one pass", async () => {
    // Prepare
    const t = harness();
    t.ssmMock.on(GetParametersByPathCommand).resolves({});
    liveEc2(t, []);
    // Act
    const result = await staleSsm(t.deps, {}, unlimited);
    // Assess
    expect(result).to.deep.equal({ complete: true, resumed: false, listed: 0, stale: 0, deleted: 0, passes: 1 });
    expect(t.ec2Mock.calls()).to.have.length(0);
  });

  it("an EC2 answer without reservations means none of the batch's instances exists", async () => {
    // Prepare
    const t = harness();
    const store = ssmPath(t, [param(1)]);
    t.ec2Mock.on(DescribeInstancesCommand).resolves({});
    // Act
    const result = await staleSsm(t.deps, {}, unlimited);
    // Assess
    expect(store).to.deep.equal([]);
    expect(result).to.deep.include({ complete: true, deleted: 1 });
  });

  it("describes at most 100 instance ids per DescribeInstances call, even for a page larger than SSM's 10", async () => {
    // Prepare: one listing page of 250 parameters (SSM caps pages at 10; the batch limit must hold whatever a page holds).
    const t = harness();
    const store = ssmPath(
      t,
      range(1, 250).map((n) => param(n)),
      "key",
      250,
    );
    liveEc2(t, [{ n: 1 }, { n: 150 }, { n: 250 }]);
    // Act
    const result = await staleSsm(t.deps, {}, unlimited);
    // Assess
    const batches = t.ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input.Filters?.[0]?.Values ?? []);
    expect(batches.map((b) => b.length)).to.deep.equal([100, 100, 50]);
    expect(batches.flat()).to.deep.equal(range(1, 250).map(id));
    expect(store.map((p) => p.Name)).to.deep.equal(names([1, 150, 250]));
    expect(result).to.deep.include({ complete: true, deleted: 247 });
  });
});
