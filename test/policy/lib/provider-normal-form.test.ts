/** policy/lib/provider-normal-form.ts: documents in the order the AWS provider compares them. */
import { expect } from "chai";
import { byteOrder, canonicalPolicy, isZero, orderContainerDefinitions, reduceContainerDefinitions } from "../../../policy/lib/provider-normal-form";

describe("provider normal form (policy/lib/provider-normal-form.ts)", () => {
  const orders: Array<[string, string, number]> = [
    ["AWSX", "AWS_REGION", -1],
    ["A", "a", -1],
    ["é", "z", 1],
    ["same", "same", 0],
  ];
  for (const [a, b, sign] of orders) {
    it(`byteOrder(${a}, ${b}) is ${sign}`, () => expect(Math.sign(byteOrder(a, b))).to.equal(sign));
  }

  const zeros: Array<[unknown, boolean]> = [
    [{ name: "", value: "" }, true],
    [{ name: "A", value: "" }, false],
    [{}, true],
    [[], true],
    [0, true],
    ["x", false],
  ];
  for (const [v, zero] of zeros) {
    it(`isZero(${JSON.stringify(v)}) is ${zero}`, () => expect(isZero(v)).to.equal(zero));
  }

  it("orders containers, environment and secrets by name, and compacts zero entries", () => {
    const out = orderContainerDefinitions([
      { name: "b", environment: [{ name: "Z" }, { name: "A_" }, { name: "A" }, {}], secrets: [{ name: "s2" }, { name: "s1" }] },
      { name: "a" },
    ]) as Array<Record<string, unknown>>;
    expect(out.map((c) => c.name)).to.deep.equal(["a", "b"]);
    expect(out[1]).to.deep.equal({ name: "b", environment: [{ name: "A" }, { name: "A_" }, { name: "Z" }], secrets: [{ name: "s1" }, { name: "s2" }] });
  });

  it("reduces as containerDefinitionsAreEquivalent does: essential, health check and port defaults, empty lists absent", () => {
    const [c] = reduceContainerDefinitions(
      [{ name: "a", command: [], portMappings: [{ containerPort: 80, protocol: "tcp", hostPort: 0 }], healthCheck: { command: ["x"] } }],
      true,
    ) as Array<Record<string, unknown>>;
    expect(c).to.deep.equal({
      name: "a",
      essential: true,
      portMappings: [{ containerPort: 80, hostPort: 80 }],
      healthCheck: { command: ["x"], interval: 30, retries: 3, timeout: 5 },
    });
  });

  it("canonicalPolicy: equal for the same grant written in another order or with a lone string", () => {
    const a = {
      Version: "2012-10-17",
      Statement: [
        { Effect: "Allow", Action: ["b:X", "a:Y"], Resource: "*" },
        { Effect: "Deny", Action: "c:Z", Resource: ["r2", "r1"] },
      ],
    };
    const b = {
      Statement: [
        { Resource: ["r1", "r2"], Action: ["c:Z"], Effect: "Deny" },
        { Resource: ["*"], Action: ["a:Y", "b:X"], Effect: "Allow" },
      ],
      Version: "2012-10-17",
    };
    expect(canonicalPolicy(a)).to.deep.equal(canonicalPolicy(b));
  });

  it("canonicalPolicy: different for a different grant (an extra NotResource, another action)", () => {
    const base = { Statement: [{ Effect: "Allow", Action: ["a:Y"], Resource: "*" }] };
    expect(canonicalPolicy(base)).to.not.deep.equal(canonicalPolicy({ Statement: [{ Effect: "Allow", Action: ["a:Y"], Resource: "*", NotResource: "x" }] }));
    expect(canonicalPolicy(base)).to.not.deep.equal(canonicalPolicy({ Statement: [{ Effect: "Allow", Action: ["a:Z"], Resource: "*" }] }));
  });
});
