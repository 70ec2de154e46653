import { expect } from "chai";
import { spotSignalOf, spotSignalPattern } from "../../../functions/gpu/spot-events";

/** The EC2 user guide's sample events, with a real instance id and time. */
const WARNING = {
  version: "0",
  id: "12345678-1234-1234-1234-123456789012",
  "detail-type": "EC2 Spot Instance Interruption Warning",
  source: "aws.ec2",
  account: "123456789012",
  time: "2026-11-25T12:00:00Z",
  region: "us-east-2",
  resources: ["arn:aws:ec2:us-east-2:123456789012:instance/i-1234567890abcdef0"],
  detail: { "instance-id": "i-1234567890abcdef0", "instance-action": "terminate" },
};
const REBALANCE = { ...WARNING, "detail-type": "EC2 Instance Rebalance Recommendation", detail: { "instance-id": "i-1234567890abcdef0" } };

describe("gpu/spot-events (pure)", () => {
  const cases: Array<[string, string, ReturnType<typeof spotSignalOf>]> = [
    [
      "an interruption warning",
      JSON.stringify(WARNING),
      { signal: { kind: "interruption", instanceId: "i-1234567890abcdef0", time: "2026-11-25T12:00:00Z", action: "terminate" } },
    ],
    [
      "a rebalance recommendation",
      JSON.stringify(REBALANCE),
      { signal: { kind: "rebalance", instanceId: "i-1234567890abcdef0", time: "2026-11-25T12:00:00Z" } },
    ],
    ["the schedule's tick", JSON.stringify({ check: "gpu-scaler", scheduledAt: "2026-11-25T12:00:00Z" }), undefined],
    ["a body that is no JSON (a tick sent by hand)", "tick", undefined],
    ["another service's event", JSON.stringify({ ...WARNING, source: "aws.ecs" }), undefined],
    [
      "EC2's event without its instance",
      JSON.stringify({ ...WARNING, detail: {} }),
      { malformed: "detail.instance-id: Invalid input: expected string, received undefined" },
    ],
    ["EC2's event of another type", JSON.stringify({ ...WARNING, "detail-type": "EC2 Instance State-change Notification" }), { malformed: "" }],
    ["EC2's event without a time", JSON.stringify({ ...WARNING, time: "soon" }), { malformed: "" }],
  ];
  for (const [label, body, want] of cases) {
    it(`reads ${label}`, () => {
      // Act
      const got = spotSignalOf(body);
      // Assess
      if (want && "malformed" in want && want.malformed === "") expect(got).to.have.property("malformed").that.is.a("string").and.not.equal("");
      else expect(got).to.deep.equal(want);
    });
  }

  it("matches both detail types from EC2 only", () => {
    expect(spotSignalPattern()).to.deep.equal({
      source: ["aws.ec2"],
      "detail-type": ["EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"],
    });
  });
});
