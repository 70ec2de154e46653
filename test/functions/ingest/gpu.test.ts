import { DescribeInstancesCommand, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { GetParameterCommand, ParameterNotFound, PutParameterCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import {
  findRunningGpu,
  readGpuInstanceId,
  resolveGpuAddress,
  tryStartGpu,
  GpuUnavailableError,
} from "../../../functions/ingest/gpu";
import {
  ec2Error,
  fakeDescribeInstances,
  mockedIngestDeps,
  NAME_TAG,
  PARAM,
  type FakeInstance,
} from "../helpers/ingest-deps";

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
      expect(t.ec2Mock.commandCalls(StartInstancesCommand).map((c) => c.args[0].input)).to.deep.equal([
        { InstanceIds: ["i-tagfound"] },
      ]);
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

        expect(t.ec2Mock.commandCalls(StartInstancesCommand).map((x) => x.args[0].input)).to.deep.equal([
          { InstanceIds: ["i-new"] },
        ]);
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
});
