import { expect } from "chai";
import { z } from "zod";
import { EnvConfigError, envInt, envUrl, parseEnv } from "../../../functions/shared/env";

/** The EnvConfigError `parse` throws; fails the test if it does not throw one. */
function configError(parse: () => unknown): EnvConfigError {
  try {
    parse();
  } catch (error) {
    if (error instanceof EnvConfigError) return error;
    throw error;
  }
  throw new Error("expected an EnvConfigError");
}

describe("shared/env", () => {
  it("reads only the variables the schema names, with defaults for unset and empty ones", () => {
    // Prepare
    const shape = { PORT: envInt(1, 65535), REGION: z.string().default("us-east-1"), MODE: z.string().default("live") };
    // Act
    const parsed = parseEnv(shape, { PORT: "8080", REGION: "", OTHER: "ignored" });
    // Assess
    expect(parsed).to.deep.equal({ PORT: 8080, REGION: "us-east-1", MODE: "live" });
  });

  it("throws an EnvConfigError naming every bad variable and why, joined in one message", () => {
    // Act
    const error = configError(() => parseEnv({ PORT: envInt(1, 65535), ENDPOINT: envUrl(), TABLE: z.string() }, { PORT: "0", ENDPOINT: "ftp://host", TABLE: "" }));
    // Assess
    expect(error.name).to.equal("EnvConfigError");
    expect(error.problems).to.deep.equal([
      'PORT is invalid (must be >= 1; got "0")',
      'ENDPOINT is invalid (must be an http(s) URL; got "ftp://host")',
      "TABLE is required but not set",
    ]);
    expect(error.message).to.equal(
      'Invalid Lambda environment: PORT is invalid (must be >= 1; got "0"); ENDPOINT is invalid (must be an http(s) URL; got "ftp://host"); TABLE is required but not set',
    );
  });

  describe("envInt: digits only, within its bounds", () => {
    const cases: Array<{ raw: string; expected: number | string }> = [
      { raw: "1", expected: 1 },
      { raw: "65535", expected: 65535 },
      { raw: "0", expected: "must be >= 1" },
      { raw: "65536", expected: "must be <= 65535" },
      { raw: "8080abc", expected: "must be a whole number" },
      { raw: "abc8080", expected: "must be a whole number" },
      { raw: "1e3", expected: "must be a whole number" },
      { raw: "-1", expected: "must be a whole number" },
      { raw: "8.5", expected: "must be a whole number" },
    ];
    for (const { raw, expected } of cases) {
      it(`${JSON.stringify(raw)} → ${typeof expected === "number" ? expected : `rejected: ${expected}`}`, () => {
        const parse = () => parseEnv({ PORT: envInt(1, 65535) }, { PORT: raw });
        if (typeof expected === "number") expect(parse()).to.deep.equal({ PORT: expected });
        else expect(configError(parse).problems).to.deep.equal([`PORT is invalid (${expected}; got ${JSON.stringify(raw)})`]);
      });
    }
  });

  describe("envUrl: an http or https URL, nothing else", () => {
    const cases: Array<{ raw: string; ok: boolean }> = [
      { raw: "http://localhost:8080", ok: true },
      { raw: "https://gpu.internal/v1", ok: true },
      { raw: "httpsx://gpu.internal", ok: false },
      { raw: "xhttp://gpu.internal", ok: false },
      { raw: "ftp://gpu.internal", ok: false },
      { raw: "gpu.internal", ok: false },
    ];
    for (const { raw, ok } of cases) {
      it(`${ok ? "accepts" : "rejects"} ${raw}`, () => {
        const parse = () => parseEnv({ ENDPOINT: envUrl() }, { ENDPOINT: raw });
        if (ok) expect(parse()).to.deep.equal({ ENDPOINT: raw });
        else expect(configError(parse).problems).to.deep.equal([`ENDPOINT is invalid (must be an http(s) URL; got ${JSON.stringify(raw)})`]);
      });
    }
  });
});
