import { expect } from "chai";
import { z } from "zod";
import { byteOrder, EnvConfigError, envCodec, envFlag, envInt, envJson, envList, envText, envUrl, optional } from "../../../functions/shared/env";

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

describe("shared/env: the env codec", () => {
  const codec = envCodec({ port: envInt("PORT"), endpoint: envUrl("ENDPOINT"), table: envText("TABLE"), arn: optional(envText("ARN")) });

  it("reads only the variables its fields name, into the fields, and leaves an optional one unset", () => {
    // Act
    const parsed = codec.parse({ PORT: "8080", ENDPOINT: "https://gpu.internal/v1", TABLE: "jobs", OTHER: "ignored" });

    // Assess
    expect(parsed).to.deep.equal({ port: 8080, endpoint: "https://gpu.internal/v1", table: "jobs" });
  });

  it("has no defaults: an unset or empty variable is named as required", () => {
    // Act
    const error = configError(() => codec.parse({ PORT: "", ENDPOINT: "ftp://host" }));

    // Assess: every problem, in byte order of the names
    expect(error.name).to.equal("EnvConfigError");
    expect(error.problems).to.deep.equal([
      'ENDPOINT is invalid (must be an http(s) URL; got "ftp://host")',
      "PORT is required but not set",
      "TABLE is required but not set",
    ]);
    expect(error.message).to.equal(`Invalid Lambda environment: ${error.problems.join("; ")}`);
  });

  it("emits an environment in byte order of the names, whatever the fields' order", () => {
    // Prepare
    const mixed = envCodec({ b: envText("b_lower"), a: envText("Z_UPPER"), c: envText("A_FIRST"), d: envText("_UNDERSCORE") });

    // Act
    const names = Object.keys(mixed.encode({ a: "1", b: "2", c: "3", d: "4" }));

    // Assess: upper case before `_` before lower case, as Go's cmp.Compare orders them
    expect(names).to.deep.equal(["A_FIRST", "Z_UPPER", "_UNDERSCORE", "b_lower"]);
    expect([...names].sort(byteOrder)).to.deep.equal(names);
  });

  it("refuses two fields naming one variable", () => {
    expect(() => envCodec({ a: envText("SAME"), b: envInt("SAME") })).to.throw("SAME is named by two fields");
  });

  describe("field parsers: required and well-typed, no bounds", () => {
    const cases: Array<{
      title: string;
      field:
        | ReturnType<typeof envText>
        | ReturnType<typeof envInt>
        | ReturnType<typeof envFlag>
        | ReturnType<typeof envList>
        | ReturnType<typeof envJson<number[]>>;
      raw: string;
      value?: unknown;
      problem?: string;
    }> = [
      { title: "an int of any size", field: envInt("V"), raw: "900000", value: 900_000 },
      { title: "an int zero", field: envInt("V"), raw: "0", value: 0 },
      { title: "an int with letters", field: envInt("V"), raw: "8080abc", problem: "must be a whole number" },
      { title: "an int in exponent form", field: envInt("V"), raw: "1e3", problem: "must be a whole number" },
      { title: "a negative int", field: envInt("V"), raw: "-1", problem: "must be a whole number" },
      { title: "a URL that is not http(s)", field: envUrl("V"), raw: "ftp://gpu.internal", problem: "must be an http(s) URL" },
      { title: "a URL without a scheme", field: envUrl("V"), raw: "gpu.internal", problem: "must be an http(s) URL" },
      { title: "a flag", field: envFlag("V"), raw: "YES", value: true },
      { title: "a flag that is no boolean", field: envFlag("V"), raw: "maybe", problem: "must be true or false" },
      { title: "a list with blanks", field: envList("V"), raw: "a, ,b", value: ["a", "b"] },
      { title: "JSON", field: envJson("V", z.array(z.number())), raw: "[1,2]", value: [1, 2] },
      { title: "text that is not JSON", field: envJson("V", z.array(z.number())), raw: "[", problem: "must be JSON" },
    ];
    for (const { title, field, raw, value, problem } of cases) {
      it(`${problem ? "rejects" : "reads"} ${title}`, () => {
        // Prepare
        const one = envCodec({ v: field });

        // Act
        const parse = () => one.parse({ V: raw });

        // Assess
        if (problem) expect(configError(parse).problems).to.deep.equal([`V is invalid (${problem}; got ${JSON.stringify(raw)})`]);
        else expect(parse()).to.deep.equal({ v: value });
      });
    }
  });
});
