import { expect } from "chai";
import { parseDlqConfig, parseIdleConfig, parseWindowConfig } from "../../../functions/ingest/config";
import { EnvConfigError } from "../../../functions/shared/env";
import { ENV_SAMPLES, sampleEnv } from "../helpers/env-samples";

/** The values behind a sample env (what each parser must give back). */
const valuesOf = (name: string) => ENV_SAMPLES.find((c) => c.name === name)!.values;

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
  const parsers: Array<[string, (env: NodeJS.ProcessEnv) => unknown]> = [
    ["ingest window", parseWindowConfig],
    ["ingest DLQ consumer", parseDlqConfig],
    ["ingest GPU idle", parseIdleConfig],
  ];
  for (const [name, parse] of parsers) {
    it(`${name}: reads every variable the program sets into its config`, () => {
      // Act
      const config = parse(sampleEnv(name));

      // Assess
      expect(config).to.deep.equal(valuesOf(name));
    });
  }

  it("has no defaults: the values the program sets are required (GPU_INSTANCE_ID_PARAM and GPU_NAME_TAG are per stack)", () => {
    // Prepare
    const { GPU_INSTANCE_ID_PARAM: _param, GPU_NAME_TAG: _tag, GPU_REQUEST_TIMEOUT_MS: _timeout, ...env } = sampleEnv("ingest window");

    // Act
    const error = errorOf(() => parseWindowConfig(env));

    // Assess
    expect(error.problems).to.deep.equal([
      "GPU_INSTANCE_ID_PARAM is required but not set",
      "GPU_NAME_TAG is required but not set",
      "GPU_REQUEST_TIMEOUT_MS is required but not set",
    ]);
  });

  const invalid: Array<{ name: string; change: Record<string, string>; problem: string }> = [
    { name: "a port that is not a number", change: { GPU_SERVICE_PORT: "80a" }, problem: 'GPU_SERVICE_PORT is invalid (must be a whole number; got "80a")' },
    {
      name: "a quarantine queue that is not a URL",
      change: { QUARANTINE_QUEUE_URL: "ingest-dlq" },
      problem: 'QUARANTINE_QUEUE_URL is invalid (must be an http(s) URL; got "ingest-dlq")',
    },
    { name: "an empty service path", change: { GPU_SERVICE_PATH: "" }, problem: "GPU_SERVICE_PATH is required but not set" },
  ];
  for (const { name, change, problem } of invalid) {
    it(`rejects the window environment: ${name}`, () => {
      expect(errorOf(() => parseWindowConfig({ ...sampleEnv("ingest window"), ...change })).problems).to.deep.equal([problem]);
    });
  }

  it("names every missing variable of the DLQ environment at once", () => {
    expect(errorOf(() => parseDlqConfig({})).problems).to.have.length(Object.keys(sampleEnv("ingest DLQ consumer")).length);
  });
});
