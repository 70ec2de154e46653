import { expect } from "chai";
import { namesInIdOrder } from "../../infra/network-zones";
import { configIssues, devConfig, withValue } from "./helpers/stack-config";

describe("zones pinned by AZ ID (infra/network-zones.ts)", () => {
  // This account's pairing: use1-az1 is us-east-1c here, use1-az4 is us-east-1a.
  const zones = { names: ["us-east-1a", "us-east-1b", "us-east-1c"], zoneIds: ["use1-az4", "use1-az6", "use1-az1"] };

  it("maps the IDs to this account's names, in the order the stack gave them", () => {
    expect(namesInIdOrder(["use1-az1", "use1-az4"], zones)).to.deep.equal({ names: ["us-east-1c", "us-east-1a"] });
  });

  it("reports every ID the account does not have as an available zone", () => {
    expect(namesInIdOrder(["use1-az1", "use1-az3", "use1-az5"], zones)).to.deep.equal({ missing: ["use1-az3", "use1-az5"] });
  });

  const rejected: Array<[string, string, unknown, string, RegExp]> = [
    [
      "a zone name instead of an ID",
      "network.availabilityZoneIds",
      ["us-east-1a", "us-east-1b"],
      "encache:network.availabilityZoneIds[0]",
      /AZ ID such as use1-az1/,
    ],
    ["one zone", "network.availabilityZoneIds", ["use1-az1"], "encache:network.availabilityZoneIds", /at least 2/],
    ["four zones", "network.availabilityZoneIds", ["use1-az1", "use1-az2", "use1-az4", "use1-az5"], "encache:network.availabilityZoneIds", /at most 3/],
    ["a zone twice", "network.availabilityZoneIds", ["use1-az1", "use1-az1"], "encache:network.availabilityZoneIds", /twice/],
    ["a count that disagrees with the IDs", "network.availabilityZones", 3, "encache:network.availabilityZones", /availabilityZoneIds names 2 zones/],
  ];
  for (const [title, path, value, key, reason] of rejected) {
    it(`rejects ${title}, naming ${key}`, () => {
      const issues = configIssues(withValue(devConfig(), path, value));
      expect(
        issues.find((i) => i.startsWith(`${key}: `)),
        issues.join("\n"),
      ).to.match(reason);
    });
  }

  it("accepts a count alone, as before zones were pinned", () => {
    const raw = withValue(withValue(devConfig(), "network.availabilityZoneIds", undefined), "network.availabilityZones", 3);
    expect(configIssues(raw)).to.deep.equal([]);
  });
});
