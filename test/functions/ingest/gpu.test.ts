import { DescribeInstancesCommand, type DescribeInstancesCommandOutput, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { GetParameterCommand, ParameterNotFound, PutParameterCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { errorMessage } from "../../../functions/shared/logger";
import {
  describeInstanceById,
  findRunningGpu,
  lookupGpu,
  readGpuInstanceId,
  resolveGpuAddress,
  tryStartGpu,
  GpuUnavailableError,
} from "../../../functions/ingest/gpu";
import { describeReply, ec2Error, fakeDescribeInstances, mockedIngestDeps, NAME_TAG, PARAM, type FakeInstance } from "../helpers/ingest-deps";

function ssmHolds(ssmMock: ReturnType<typeof mockedIngestDeps>["ssmMock"], value: string): void {
  ssmMock.on(GetParameterCommand, { Name: PARAM }).resolves({ Parameter: { Name: PARAM, Value: value } });
}

function throttling(): Error {
  return Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" });
}

describe("ingest/gpu", () => {
  describe("readGpuInstanceId", () => {
    it("returns the registered id", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-abc123");

      expect(await readGpuInstanceId(t.deps)).to.equal("i-abc123");
    });

    it("treats the sentinel 'none' as no id", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "none");

      expect(await readGpuInstanceId(t.deps)).to.equal(null);
    });

    it("treats a missing parameter as no id and logs it", async () => {
      const t = mockedIngestDeps();
      t.ssmMock.on(GetParameterCommand).rejects(new ParameterNotFound({ message: "not found", $metadata: {} }));

      expect(await readGpuInstanceId(t.deps)).to.equal(null);
      expect(t.logger.withStep("gpu_instance_id_param_not_found")[0]?.fields).to.include({ param: PARAM });
    });

    it("propagates other SSM errors such as AccessDenied", async () => {
      const t = mockedIngestDeps();
      t.ssmMock.on(GetParameterCommand).rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException" }));

      const error = await readGpuInstanceId(t.deps).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(Error).with.property("name", "AccessDeniedException");
    });
  });

  describe("tryStartGpu", () => {
    it("AC-1 starts the stopped instance registered in SSM, source ssm", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-abc123");
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-abc123", state: "stopped" }]);
      t.ec2Mock.on(StartInstancesCommand).resolves({});

      const outcome = await tryStartGpu(t.deps);

      expect(outcome).to.equal("attempted");
      const starts = t.ec2Mock.commandCalls(StartInstancesCommand);
      expect(starts).to.have.length(1);
      expect(starts[0]?.args[0].input).to.deep.equal({ InstanceIds: ["i-abc123"] });
      const [attempted] = t.logger.withStep("gpu_autostart_attempted");
      expect(attempted?.fields).to.deep.equal({
        step: "gpu_autostart_attempted",
        instance_id: "i-abc123",
        source: "ssm",
      });
      expect(t.ssmMock.commandCalls(PutParameterCommand), "no SSM write on start").to.have.length(0);
    });

    it("AC-2 falls back to the tag scan when SSM holds 'none', source tag_scan", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "none");
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-tagfound", state: "stopped" }]);
      t.ec2Mock.on(StartInstancesCommand).resolves({});

      await tryStartGpu(t.deps);

      const [scan] = t.ec2Mock.commandCalls(DescribeInstancesCommand);
      expect(scan?.args[0].input.Filters).to.deep.equal([
        { Name: "tag:Name", Values: [NAME_TAG] },
        { Name: "instance-state-name", Values: ["stopped"] },
      ]);
      expect(t.ec2Mock.commandCalls(StartInstancesCommand).map((c) => c.args[0].input)).to.deep.equal([{ InstanceIds: ["i-tagfound"] }]);
      expect(t.logger.withStep("gpu_autostart_attempted")[0]?.fields).to.include({
        instance_id: "i-tagfound",
        source: "tag_scan",
      });
    });

    it("AC-3 does not start anything when SSM holds 'none' and no stopped instance carries the tag", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "none");
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-other", state: "stopped", nameTag: "someone-else" }]);

      const outcome = await tryStartGpu(t.deps);

      expect(outcome).to.equal("no_instance_found");
      expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(0);
      expect(t.logger.steps()).to.include("gpu_autostart_no_instance_found");
    });

    it("AC-4 swallows a StartInstances error and logs gpu_autostart_failed", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-abc");
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-abc", state: "stopped" }]);
      t.ec2Mock.on(StartInstancesCommand).rejects(ec2Error("UnauthorizedOperation", "access denied"));

      const outcome = await tryStartGpu(t.deps);

      expect(outcome).to.equal("failed");
      const [failed] = t.logger.withStep("gpu_autostart_failed");
      expect(failed?.level).to.equal("error");
      expect(String(failed?.fields.error)).to.contain("access denied");
    });

    const neverThrowCases: { name: string; arrange: (t: ReturnType<typeof mockedIngestDeps>) => void; error: string }[] = [
      {
        name: "SSM GetParameter AccessDenied",
        arrange: (t) => t.ssmMock.on(GetParameterCommand).rejects(Object.assign(new Error("no ssm"), { name: "AccessDeniedException" })),
        error: "no ssm",
      },
      {
        name: "SSM GetParameter throttled",
        arrange: (t) => t.ssmMock.on(GetParameterCommand).rejects(throttling()),
        error: "Rate exceeded",
      },
      {
        name: "EC2 DescribeInstances throws",
        arrange: (t) => {
          ssmHolds(t.ssmMock, "i-abc");
          t.ec2Mock.on(DescribeInstancesCommand).rejects(ec2Error("InternalError", "ec2 is down"));
        },
        error: "ec2 is down",
      },
      {
        name: "EC2 DescribeInstances throttled",
        arrange: (t) => {
          ssmHolds(t.ssmMock, "i-abc");
          t.ec2Mock.on(DescribeInstancesCommand).rejects(ec2Error("RequestLimitExceeded", "slow down"));
        },
        error: "slow down",
      },
      {
        name: "tag scan throws after SSM 'none'",
        arrange: (t) => {
          ssmHolds(t.ssmMock, "none");
          t.ec2Mock.on(DescribeInstancesCommand).rejects(ec2Error("UnauthorizedOperation", "scan denied"));
        },
        error: "scan denied",
      },
    ];
    for (const c of neverThrowCases) {
      it(`never throws: ${c.name} → gpu_autostart_failed, no StartInstances`, async () => {
        const t = mockedIngestDeps();
        c.arrange(t);

        const outcome = await tryStartGpu(t.deps);

        expect(outcome).to.equal("failed");
        expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(0);
        expect(String(t.logger.withStep("gpu_autostart_failed")[0]?.fields.error)).to.contain(c.error);
      });
    }

    const staleCases: { name: string; instances: FakeInstance[] }[] = [
      { name: "the id is unknown to EC2 (InvalidInstanceID.NotFound)", instances: [] },
      { name: "the instance is terminated", instances: [{ id: "i-old", state: "terminated" }] },
      { name: "the instance is shutting-down", instances: [{ id: "i-old", state: "shutting-down" }] },
    ];
    for (const c of staleCases) {
      it(`treats the SSM id as stale when ${c.name} and starts the stopped tagged instance`, async () => {
        const t = mockedIngestDeps();
        ssmHolds(t.ssmMock, "i-old");
        fakeDescribeInstances(t.ec2Mock, [...c.instances, { id: "i-new", state: "stopped" }]);
        t.ec2Mock.on(StartInstancesCommand).resolves({});

        await tryStartGpu(t.deps);

        expect(t.ec2Mock.commandCalls(StartInstancesCommand).map((x) => x.args[0].input)).to.deep.equal([{ InstanceIds: ["i-new"] }]);
        expect(t.logger.withStep("gpu_instance_id_stale")[0]?.fields).to.include({ instance_id: "i-old" });
        expect(t.logger.withStep("gpu_autostart_attempted")[0]?.fields).to.include({ source: "tag_scan" });
      });
    }

    for (const state of ["pending", "running"] as const) {
      it(`does not call StartInstances when the instance is already ${state}`, async () => {
        const t = mockedIngestDeps();
        ssmHolds(t.ssmMock, "i-abc");
        fakeDescribeInstances(t.ec2Mock, [{ id: "i-abc", state }]);

        const outcome = await tryStartGpu(t.deps);

        expect(outcome).to.equal("skipped");
        expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(0);
        expect(t.logger.withStep("gpu_autostart_skipped")[0]?.fields).to.deep.equal({
          step: "gpu_autostart_skipped",
          instance_id: "i-abc",
          state,
        });
      });
    }
  });

  describe("tryStartGpu with what an availability check already read", () => {
    it("starts the observed stopped instance without reading SSM or EC2 again", async () => {
      const t = mockedIngestDeps();
      t.ec2Mock.on(StartInstancesCommand).resolves({});

      const outcome = await tryStartGpu(t.deps, { ssmId: "i-seen", instance: { InstanceId: "i-seen", State: { Name: "stopped" } } });

      expect(outcome).to.equal("attempted");
      expect(t.ssmMock.calls()).to.have.length(0);
      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(0);
      expect(t.ec2Mock.commandCalls(StartInstancesCommand)[0]?.args[0].input).to.deep.equal({ InstanceIds: ["i-seen"] });
      expect(t.logger.withStep("gpu_autostart_attempted")[0]?.fields).to.include({ instance_id: "i-seen", source: "ssm" });
    });

    it("falls back to the stopped-instance tag scan when the observed id is stale", async () => {
      const t = mockedIngestDeps();
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-tagged", state: "stopped" }]);
      t.ec2Mock.on(StartInstancesCommand).resolves({});

      const outcome = await tryStartGpu(t.deps, { ssmId: "i-gone", instance: null });

      expect(outcome).to.equal("attempted");
      expect(t.ssmMock.calls()).to.have.length(0);
      expect(t.ec2Mock.commandCalls(StartInstancesCommand)[0]?.args[0].input).to.deep.equal({ InstanceIds: ["i-tagged"] });
      expect(t.logger.withStep("gpu_autostart_attempted")[0]?.fields).to.include({ source: "tag_scan" });
    });
  });

  describe("findRunningGpu / resolveGpuAddress", () => {
    it("returns the running SSM instance's private IP without scanning or writing SSM", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-run");
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-run", state: "running", ip: "10.0.0.5" }]);

      expect(await resolveGpuAddress(t.deps)).to.deep.equal({ instanceId: "i-run", privateIp: "10.0.0.5" });
      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(1);
      expect(t.ssmMock.commandCalls(PutParameterCommand)).to.have.length(0);
    });

    const fallbackCases: { name: string; ssm: string; instances: FakeInstance[] }[] = [
      { name: "SSM holds 'none'", ssm: "none", instances: [] },
      { name: "the SSM id is unknown to EC2", ssm: "i-gone", instances: [] },
      { name: "the SSM id is terminated", ssm: "i-gone", instances: [{ id: "i-gone", state: "terminated" }] },
      { name: "the SSM id is stopped", ssm: "i-gone", instances: [{ id: "i-gone", state: "stopped" }] },
    ];
    for (const c of fallbackCases) {
      it(`finds the running tagged instance and writes its id to SSM when ${c.name}`, async () => {
        const t = mockedIngestDeps();
        ssmHolds(t.ssmMock, c.ssm);
        t.ssmMock.on(PutParameterCommand).resolves({ Version: 2 });
        fakeDescribeInstances(t.ec2Mock, [...c.instances, { id: "i-live", state: "running", ip: "10.0.0.9" }]);

        const address = await resolveGpuAddress(t.deps);

        expect(address).to.deep.equal({ instanceId: "i-live", privateIp: "10.0.0.9" });
        expect(t.ssmMock.commandCalls(PutParameterCommand).map((x) => x.args[0].input)).to.deep.equal([
          { Name: PARAM, Value: "i-live", Type: "String", Overwrite: true },
        ]);
        expect(t.logger.withStep("gpu_instance_id_updated")[0]?.fields).to.include({ instance_id: "i-live" });
      });
    }

    it("still returns the address when writing the id back to SSM fails", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "none");
      t.ssmMock.on(PutParameterCommand).rejects(throttling());
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-live", state: "running", ip: "10.0.0.9" }]);

      expect(await findRunningGpu(t.deps)).to.deep.equal({ instanceId: "i-live", privateIp: "10.0.0.9" });
      expect(t.logger.withStep("gpu_instance_id_update_failed")[0]?.fields.error).to.contain("Rate exceeded");
    });

    it("throws GpuUnavailableError when no instance runs", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-abc");
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-abc", state: "stopped" }]);

      const error = await resolveGpuAddress(t.deps).then(
        () => null,
        (e: unknown) => e,
      );

      expect(error).to.be.instanceOf(GpuUnavailableError);
      expect(t.ssmMock.commandCalls(PutParameterCommand)).to.have.length(0);
    });

    it("propagates a DescribeInstances error", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-abc");
      t.ec2Mock.on(DescribeInstancesCommand).rejects(ec2Error("RequestLimitExceeded"));

      const error = await resolveGpuAddress(t.deps).then(
        () => null,
        (e: unknown) => e,
      );

      expect(error).to.be.instanceOf(Error).with.property("name", "RequestLimitExceeded");
    });
  });

  describe("readGpuInstanceId, on what SSM can hold", () => {
    const values: Array<[string, { Parameter?: { Name: string; Value?: string } }, string | null]> = [
      ["an id with the newline an operator's `put-parameter` left", { Parameter: { Name: PARAM, Value: " i-abc123\n" } }, "i-abc123"],
      ["an empty value", { Parameter: { Name: PARAM, Value: "" } }, null],
      ["a parameter without a value", { Parameter: { Name: PARAM } }, null],
      ["no parameter in the reply", {}, null],
    ];
    for (const [what, reply, want] of values) {
      it(`reads ${what} as ${want === null ? "no id" : JSON.stringify(want)}`, async () => {
        const t = mockedIngestDeps();
        t.ssmMock.on(GetParameterCommand, { Name: PARAM }).resolves(reply);

        expect(await readGpuInstanceId(t.deps)).to.equal(want);
      });
    }
  });

  describe("describeInstanceById", () => {
    it("asks EC2 for exactly that id and picks that instance out of the reply", async () => {
      const t = mockedIngestDeps();
      t.ec2Mock.on(DescribeInstancesCommand).resolves(describeReply({ id: "i-other", state: "running" }, { id: "i-abc", state: "stopped" }));

      const instance = await describeInstanceById(t.deps.ec2, "i-abc");

      expect(instance?.InstanceId).to.equal("i-abc");
      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input)).to.deep.equal([{ InstanceIds: ["i-abc"] }]);
    });

    const emptyReplies: Array<[string, DescribeInstancesCommandOutput]> = [
      ["no reservations at all", { $metadata: {} }],
      ["a reservation without instances", { $metadata: {}, Reservations: [{}] }],
      ["only other instances", describeReply({ id: "i-other", state: "running" })],
    ];
    for (const [what, reply] of emptyReplies) {
      it(`answers null when EC2 lists ${what}`, async () => {
        const t = mockedIngestDeps();
        t.ec2Mock.on(DescribeInstancesCommand).resolves(reply);

        expect(await describeInstanceById(t.deps.ec2, "i-abc")).to.equal(null);
      });
    }

    for (const name of ["InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"]) {
      it(`treats EC2's ${name} as "no such instance" (null)`, async () => {
        const t = mockedIngestDeps();
        t.ec2Mock.on(DescribeInstancesCommand).rejects(ec2Error(name));

        expect(await describeInstanceById(t.deps.ec2, "i-abc")).to.equal(null);
      });
    }

    for (const name of ["RequestLimitExceeded", "UnauthorizedOperation", "InternalError"]) {
      it(`propagates any other EC2 error (${name}) instead of taking the instance for gone`, async () => {
        const t = mockedIngestDeps();
        t.ec2Mock.on(DescribeInstancesCommand).rejects(ec2Error(name));

        const error = await describeInstanceById(t.deps.ec2, "i-abc").then(
          () => null,
          (e: unknown) => e,
        );

        expect(error).to.be.instanceOf(Error).with.property("name", name);
      });
    }
  });

  describe("only 'instance not found' is harmless, end to end", () => {
    /** By id: `byId`; by tag: the filtered fake over `tagged`. */
    function describeFails(t: ReturnType<typeof mockedIngestDeps>, byId: Error, tagged: FakeInstance[]): void {
      fakeDescribeInstances(t.ec2Mock, tagged);
      t.ec2Mock.on(DescribeInstancesCommand, { InstanceIds: ["i-ssm"] }).rejects(byId);
    }

    it("does not fall back to the tag scan when the SSM id's describe is throttled: the lookup fails", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-ssm");
      describeFails(t, ec2Error("RequestLimitExceeded"), [{ id: "i-live", state: "running", ip: "10.0.0.9" }]);

      const error = await resolveGpuAddress(t.deps).then(
        () => null,
        (e: unknown) => e,
      );

      expect(error).to.be.instanceOf(Error).with.property("name", "RequestLimitExceeded");
      expect(t.ssmMock.commandCalls(PutParameterCommand)).to.have.length(0);
    });

    it("does not start a tagged instance when the SSM id's describe is throttled: the start fails", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-ssm");
      describeFails(t, ec2Error("RequestLimitExceeded", "slow down"), [{ id: "i-tagged", state: "stopped" }]);
      t.ec2Mock.on(StartInstancesCommand).resolves({});

      expect(await tryStartGpu(t.deps)).to.equal("failed");
      expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(0);
    });

    it("falls back to the running tagged instance when EC2 no longer knows the SSM id", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-ssm");
      t.ssmMock.on(PutParameterCommand).resolves({ Version: 2 });
      describeFails(t, ec2Error("InvalidInstanceID.NotFound"), [{ id: "i-live", state: "running", ip: "10.0.0.9" }]);

      expect(await resolveGpuAddress(t.deps)).to.deep.equal({ instanceId: "i-live", privateIp: "10.0.0.9" });
    });
  });

  describe("the tag scans", () => {
    it("with SSM 'none', looks the running GPU up by its Name tag and the running state only", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "none");
      t.ssmMock.on(PutParameterCommand).resolves({ Version: 2 });
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-live", state: "running", ip: "10.0.0.9" }]);

      await findRunningGpu(t.deps);

      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input)).to.deep.equal([
        {
          Filters: [
            { Name: "tag:Name", Values: [NAME_TAG] },
            { Name: "instance-state-name", Values: ["running"] },
          ],
          // The paginator's own fields, unset on a first page.
          MaxResults: undefined,
          NextToken: undefined,
        },
      ]);
      expect(t.logger.steps()).to.not.include("gpu_instance_not_running");
    });

    it("reads on to the next page when EC2's first page of the scan is empty", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "none");
      t.ssmMock.on(PutParameterCommand).resolves({ Version: 2 });
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-live", state: "running", ip: "10.0.0.9" }], { emptyFirstPage: true });

      expect(await findRunningGpu(t.deps)).to.deep.equal({ instanceId: "i-live", privateIp: "10.0.0.9" });
      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(2);
    });

    it("starts the stopped tagged instance found on a later page of the scan", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "none");
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-tagged", state: "stopped" }], { emptyFirstPage: true });
      t.ec2Mock.on(StartInstancesCommand).resolves({});

      expect(await tryStartGpu(t.deps)).to.equal("attempted");
      expect(t.ec2Mock.commandCalls(StartInstancesCommand)[0]?.args[0].input).to.deep.equal({ InstanceIds: ["i-tagged"] });
    });

    it("finds nothing, without failing, when the scan's reply has no reservations", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "none");
      t.ec2Mock.on(DescribeInstancesCommand).resolves({ $metadata: {} });

      expect(await tryStartGpu(t.deps)).to.equal("no_instance_found");
      expect(await findRunningGpu(t.deps)).to.equal(null);
    });
  });

  describe("instances EC2 reports without a state", () => {
    const stateless = { $metadata: {}, Reservations: [{ Instances: [{ InstanceId: "i-ssm", PrivateIpAddress: "10.0.0.1" }] }] };

    it("does not take the SSM instance for running: falls back to the running tagged one", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-ssm");
      t.ssmMock.on(PutParameterCommand).resolves({ Version: 2 });
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-live", state: "running", ip: "10.0.0.9" }]);
      t.ec2Mock.on(DescribeInstancesCommand, { InstanceIds: ["i-ssm"] }).resolves(stateless);

      expect(await findRunningGpu(t.deps)).to.deep.equal({ instanceId: "i-live", privateIp: "10.0.0.9" });
      expect(t.logger.withStep("gpu_instance_not_running")[0]?.fields).to.deep.equal({
        step: "gpu_instance_not_running",
        instance_id: "i-ssm",
        state: "not_found",
      });
    });

    it("still tries to start the SSM instance: it is not known to be gone", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-ssm");
      t.ec2Mock.on(DescribeInstancesCommand).resolves(stateless);
      t.ec2Mock.on(StartInstancesCommand).resolves({});

      expect(await tryStartGpu(t.deps)).to.equal("attempted");
      expect(t.ec2Mock.commandCalls(StartInstancesCommand)[0]?.args[0].input).to.deep.equal({ InstanceIds: ["i-ssm"] });
    });
  });

  describe("what the lookup logs and reports", () => {
    const notRunning: Array<[string, FakeInstance[], string]> = [
      ["stopped", [{ id: "i-ssm", state: "stopped" }], "stopped"],
      ["unknown to EC2", [], "not_found"],
    ];
    for (const [what, instances, state] of notRunning) {
      it(`logs gpu_instance_not_running with the SSM id and state "${state}" when it is ${what}`, async () => {
        const t = mockedIngestDeps();
        ssmHolds(t.ssmMock, "i-ssm");
        fakeDescribeInstances(t.ec2Mock, instances);

        expect(await findRunningGpu(t.deps)).to.equal(null);
        expect(t.logger.withStep("gpu_instance_not_running").map((e) => e.fields)).to.deep.equal([
          { step: "gpu_instance_not_running", instance_id: "i-ssm", state },
        ]);
      });
    }

    const registered: Array<[string, string, FakeInstance[], string]> = [
      ["SSM held 'none'", "none", [], "none"],
      ["SSM held a stopped id", "i-old", [{ id: "i-old", state: "stopped" }], "i-old"],
    ];
    for (const [what, ssm, instances, previous] of registered) {
      it(`logs gpu_instance_id_updated with the id it replaced ("${previous}") when ${what}`, async () => {
        const t = mockedIngestDeps();
        ssmHolds(t.ssmMock, ssm);
        t.ssmMock.on(PutParameterCommand).resolves({ Version: 2 });
        fakeDescribeInstances(t.ec2Mock, [...instances, { id: "i-live", state: "running", ip: "10.0.0.9" }]);

        await findRunningGpu(t.deps);

        expect(t.logger.withStep("gpu_instance_id_updated").map((e) => e.fields)).to.deep.equal([
          { step: "gpu_instance_id_updated", instance_id: "i-live", previous_instance_id: previous },
        ]);
      });
    }

    it("reports what it read (the SSM id and its instance) along with a running GPU's address", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-run");
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-run", state: "running", ip: "10.0.0.5" }]);

      const { address, seen } = await lookupGpu(t.deps);

      expect(address).to.deep.equal({ instanceId: "i-run", privateIp: "10.0.0.5" });
      expect(seen.ssmId).to.equal("i-run");
      expect(seen.instance).to.deep.include({ InstanceId: "i-run", State: { Name: "running" } });
    });

    it("names the error GpuUnavailableError and says what it checked when no GPU runs", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "none");
      fakeDescribeInstances(t.ec2Mock, []);

      const error = await resolveGpuAddress(t.deps).then(
        () => null,
        (e: unknown) => e,
      );

      expect(error).to.be.instanceOf(GpuUnavailableError);
      expect(errorMessage(error)).to.equal("GpuUnavailableError: no running GPU instance (checked SSM id and Name tag)");
    });
  });

  describe("tryStartGpu when EC2 refuses the start for now", () => {
    it("does not send StartInstances to an instance still stopping, and logs gpu_autostart_stopping", async () => {
      const t = mockedIngestDeps();
      ssmHolds(t.ssmMock, "i-abc");
      fakeDescribeInstances(t.ec2Mock, [{ id: "i-abc", state: "stopping" }]);

      expect(await tryStartGpu(t.deps)).to.equal("stopping");
      expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(0);
      expect(t.logger.entries.map((e) => [e.level, e.fields])).to.deep.equal([["info", { step: "gpu_autostart_stopping", instance_id: "i-abc" }]]);
    });

    const refusals: Array<[string, string, string, "info" | "warn"]> = [
      ["IncorrectInstanceState", "stopping", "gpu_autostart_stopping", "info"],
      ["InsufficientInstanceCapacity", "insufficient_capacity", "gpu_autostart_insufficient_capacity", "warn"],
    ];
    for (const [name, outcome, step, level] of refusals) {
      it(`answers ${outcome} to a StartInstances refused with ${name}, logging ${step} at ${level}`, async () => {
        const t = mockedIngestDeps();
        ssmHolds(t.ssmMock, "i-abc");
        fakeDescribeInstances(t.ec2Mock, [{ id: "i-abc", state: "stopped" }]);
        t.ec2Mock.on(StartInstancesCommand).rejects(ec2Error(name, "not now"));

        expect(await tryStartGpu(t.deps)).to.equal(outcome);
        expect(t.logger.entries.map((e) => [e.level, e.fields])).to.deep.equal([[level, { step, instance_id: "i-abc", error: `${name}: not now` }]]);
      });
    }
  });

  describe("the stale SSM id's log", () => {
    const cases: Array<[string, FakeInstance[], string]> = [
      ["unknown to EC2", [], "not_found"],
      ["terminated", [{ id: "i-old", state: "terminated" }], "terminated"],
    ];
    for (const [what, instances, state] of cases) {
      it(`says the id is stale with state "${state}" when it is ${what}`, async () => {
        const t = mockedIngestDeps();
        ssmHolds(t.ssmMock, "i-old");
        fakeDescribeInstances(t.ec2Mock, instances);

        await tryStartGpu(t.deps);

        expect(t.logger.withStep("gpu_instance_id_stale").map((e) => e.fields)).to.deep.equal([{ step: "gpu_instance_id_stale", instance_id: "i-old", state }]);
      });
    }
  });
});
