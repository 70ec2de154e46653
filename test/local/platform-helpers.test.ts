import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { ensureMotoInstalled, MotoUnavailableError } from "../../local/aws/moto";
import { describeUncreated, endpointVarOf } from "../../local/platform-start";

describe("local run: start-up helpers", () => {
  it("lists what was recorded but not created, by type, most first", () => {
    const uncreated = [
      { urn: "a", type: "aws:cloudwatch/metricAlarm:MetricAlarm" },
      { urn: "b", type: "aws:cloudwatch/metricAlarm:MetricAlarm" },
      { urn: "c", type: "aws:lambda/function:Function" },
    ];
    expect(describeUncreated({ uncreated })).to.equal("2 MetricAlarm, 1 Function");
    expect(describeUncreated({ uncreated: [] })).to.equal("nothing");
  });

  it("names a service's endpoint variable by the SDK's service id, given its byService key (the signing name)", () => {
    const cases: Array<[string, string]> = [
      ["AWS_ENDPOINT_URL_SQS", "sqs"],
      ["AWS_ENDPOINT_URL_EC2", "ec2"],
      ["AWS_ENDPOINT_URL_AUTO_SCALING", "autoscaling"],
    ];
    for (const [variable, service] of cases) {
      expect(endpointVarOf(service)).to.equal(variable);
    }
  });

  it("fails with a clear message when Python 3 is missing and moto is not installed", function () {
    // Prepare: a checkout without .venv, and no python on the way.
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "no-python-"));
    fs.mkdirSync(path.join(root, "scripts"));
    fs.copyFileSync(path.resolve(__dirname, "../../scripts/ensure-moto.sh"), path.join(root, "scripts/ensure-moto.sh"));
    const saved = process.env.PYTHON;
    process.env.PYTHON = "/nonexistent/python3";
    try {
      // Act + assert
      expect(() => ensureMotoInstalled(root)).to.throw(
        MotoUnavailableError,
        /Python 3 is required to run moto, the local AWS: .*\/nonexistent\/python3 not found/,
      );
    } finally {
      if (saved === undefined) delete process.env.PYTHON;
      else process.env.PYTHON = saved;
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
