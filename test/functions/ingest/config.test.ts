import { expect } from "chai";
import { parseDlqConfig, parseIdleConfig, parseWindowConfig } from "../../../functions/ingest/config";
import { EnvConfigError } from "../../../functions/shared/env";

const minimalWindowEnv = {
  GPU_SERVICE_PORT: "8080",
  GPU_SERVICE_PATH: "/ingest/window",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq",
  INGEST_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest",
};
const minimalDlqEnv = {
  ...minimalWindowEnv,
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-quarantine",
  INGEST_DLQ_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq",
};

function errorOf(fn: () => unknown): EnvConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof EnvConfigError) return error;
    throw error;
  }
  throw new Error("expected EnvConfigError");
}

describe("ingest/config", () => {
  it("applies the defaults to a minimal window environment", () => {
    expect(parseWindowConfig(minimalWindowEnv)).to.deep.equal({
      instanceIdParam: "/encache/gpu/instance_id",
      nameTag: "encache-gpu-worker",
      servicePort: 8080,
      servicePath: "/ingest/window",
      requestTimeoutMs: 10_000,
      quarantineQueueUrl: minimalWindowEnv.QUARANTINE_QUEUE_URL,
      ingestQueueUrl: minimalWindowEnv.INGEST_QUEUE_URL,
      retrySeconds: 10,
      bootGraceSeconds: 600,
    });
  });

  it("names INGEST_QUEUE_URL when the window environment lacks it", () => {
    const { INGEST_QUEUE_URL: _omitted, ...env } = minimalWindowEnv;
    expect(errorOf(() => parseWindowConfig(env)).message).to.contain("INGEST_QUEUE_URL");
  });

  it("reads every variable of the DLQ environment", () => {
    const config = parseDlqConfig({
      ...minimalDlqEnv,
      GPU_INSTANCE_ID_PARAM: "/x/gpu/id",
      GPU_NAME_TAG: "gpu-x",
      GPU_REQUEST_TIMEOUT_MS: "2500",
      DLQ_VISIBILITY_EXTENSION_SECONDS: "0",
    });

    expect(config).to.include({
      instanceIdParam: "/x/gpu/id",
      nameTag: "gpu-x",
      requestTimeoutMs: 2500,
      dlqUrl: minimalDlqEnv.INGEST_DLQ_URL,
      visibilityExtensionSeconds: 0,
    });
  });

  it("defaults DLQ_VISIBILITY_EXTENSION_SECONDS to 900", () => {
    expect(parseDlqConfig(minimalDlqEnv).visibilityExtensionSeconds).to.equal(900);
  });

  it("fails with a clear error naming INGEST_DLQ_URL when it is missing", () => {
    const { INGEST_DLQ_URL: _omitted, ...env } = minimalDlqEnv;

    const error = errorOf(() => parseDlqConfig(env));

    expect(error.message).to.equal("Invalid Lambda environment: INGEST_DLQ_URL is required but not set");
  });

  const invalid: { name: string; env: Record<string, string>; mentions: string[] }[] = [
    { name: "port missing", env: { ...minimalWindowEnv, GPU_SERVICE_PORT: "" }, mentions: ["GPU_SERVICE_PORT is required"] },
    { name: "port not a number", env: { ...minimalWindowEnv, GPU_SERVICE_PORT: "80a" }, mentions: ["GPU_SERVICE_PORT is invalid", "whole number"] },
    { name: "port out of range", env: { ...minimalWindowEnv, GPU_SERVICE_PORT: "70000" }, mentions: ["GPU_SERVICE_PORT", "<= 65535"] },
    { name: "path without leading slash", env: { ...minimalWindowEnv, GPU_SERVICE_PATH: "ingest" }, mentions: ["GPU_SERVICE_PATH", "must start with /"] },
    { name: "quarantine url not a URL", env: { ...minimalWindowEnv, QUARANTINE_QUEUE_URL: "ingest-dlq" }, mentions: ["QUARANTINE_QUEUE_URL", "http(s) URL"] },
    { name: "timeout zero", env: { ...minimalWindowEnv, GPU_REQUEST_TIMEOUT_MS: "0" }, mentions: ["GPU_REQUEST_TIMEOUT_MS", ">= 1"] },
  ];
  for (const c of invalid) {
    it(`rejects the window environment: ${c.name}`, () => {
      const error = errorOf(() => parseWindowConfig(c.env));

      for (const text of c.mentions) expect(error.message).to.contain(text);
    });
  }

  it("rejects a visibility extension above SQS's 12 h cap", () => {
    const error = errorOf(() => parseDlqConfig({ ...minimalDlqEnv, DLQ_VISIBILITY_EXTENSION_SECONDS: "43201" }));

    expect(error.message).to.contain("DLQ_VISIBILITY_EXTENSION_SECONDS").and.contain("<= 43200");
  });

  it("names every bad variable at once", () => {
    const error = errorOf(() => parseDlqConfig({}));

    expect(error.problems).to.have.members([
      "GPU_SERVICE_PORT is required but not set",
      "GPU_SERVICE_PATH is required but not set",
      "QUARANTINE_QUEUE_URL is required but not set",
      "INGEST_DLQ_URL is required but not set",
    ]);
  });

  it("rejects a GPU id parameter name that does not start with /", () => {
    const error = errorOf(() => parseWindowConfig({ ...minimalWindowEnv, GPU_INSTANCE_ID_PARAM: "encache/gpu/instance_id" }));

    expect(error.problems).to.deep.equal(['GPU_INSTANCE_ID_PARAM is invalid (must start with /; got "encache/gpu/instance_id")']);
  });

  describe("the idle check's environment", () => {
    const minimalIdleEnv = {
      GPU_SERVICE_PORT: "8080",
      GPU_IDLE_STOP_MINUTES: "30",
      INGEST_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest",
      INGEST_DLQ_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq",
    };

    it("applies the defaults to a minimal idle environment", () => {
      expect(parseIdleConfig(minimalIdleEnv)).to.deep.equal({
        instanceIdParam: "/encache/gpu/instance_id",
        servicePort: 8080,
        statusPath: "/status",
        requestTimeoutMs: 10_000,
        idleStopMinutes: 30,
        holdTag: "encache:gpu-hold",
        ingestQueueUrl: minimalIdleEnv.INGEST_QUEUE_URL,
        dlqUrl: minimalIdleEnv.INGEST_DLQ_URL,
      });
    });

    it("reads every variable of the idle environment", () => {
      const config = parseIdleConfig({
        ...minimalIdleEnv,
        GPU_INSTANCE_ID_PARAM: "/encache/dev/gpu/instance_id",
        GPU_STATUS_PATH: "/healthz",
        GPU_REQUEST_TIMEOUT_MS: "1500",
        GPU_HOLD_TAG: "ops:keep-on",
      });

      expect(config).to.include({ instanceIdParam: "/encache/dev/gpu/instance_id", statusPath: "/healthz", requestTimeoutMs: 1500, holdTag: "ops:keep-on" });
    });

    it("names every missing variable of the idle environment at once", () => {
      expect(errorOf(() => parseIdleConfig({})).problems).to.have.members([
        "GPU_SERVICE_PORT is required but not set",
        "GPU_IDLE_STOP_MINUTES is required but not set",
        "INGEST_QUEUE_URL is required but not set",
        "INGEST_DLQ_URL is required but not set",
      ]);
    });

    const invalid: Array<[string, Record<string, string>, string]> = [
      ["a status path without a leading slash", { GPU_STATUS_PATH: "status" }, 'GPU_STATUS_PATH is invalid (must start with /; got "status")'],
      ["an id parameter without a leading slash", { GPU_INSTANCE_ID_PARAM: "gpu" }, 'GPU_INSTANCE_ID_PARAM is invalid (must start with /; got "gpu")'],
      ["an idle window of 0 minutes (off means no function at all)", { GPU_IDLE_STOP_MINUTES: "0" }, 'GPU_IDLE_STOP_MINUTES is invalid (must be >= 1; got "0")'],
    ];
    for (const [what, change, problem] of invalid) {
      it(`rejects ${what}`, () => {
        expect(errorOf(() => parseIdleConfig({ ...minimalIdleEnv, ...change })).problems).to.deep.equal([problem]);
      });
    }
  });
});
