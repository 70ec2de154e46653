import { expect } from "chai";
import type { AutostartOutcome } from "../../../functions/ingest/gpu";
import { parkReasonFor, parkSeconds, stillBooting, type ParkConfig, type ParkReason } from "../../../functions/ingest/park";

const CONFIG: ParkConfig = { visibilityExtensionSeconds: 900, bootParkSeconds: 20, capacityRetrySeconds: 120, bootGraceSeconds: 600 };

describe("ingest/park (pure)", () => {
  const reasons: Array<[AutostartOutcome, ParkReason]> = [
    ["attempted", "booting"],
    ["skipped", "booting"],
    ["stopping", "booting"],
    ["insufficient_capacity", "capacity"],
    ["no_instance_found", "unavailable"],
    ["failed", "unavailable"],
  ];
  for (const [outcome, reason] of reasons) {
    it(`a start that was ${outcome} parks as ${reason}`, () => expect(parkReasonFor(outcome)).to.equal(reason));
  }

  it("parks 20 s while booting, 120 s for capacity, the long park otherwise", () => {
    expect((["booting", "capacity", "unavailable"] as const).map((r) => parkSeconds(r, CONFIG))).to.deep.equal([20, 120, 900]);
  });

  it("never parks longer than the long park, even when a short park is configured longer", () => {
    expect(parkSeconds("capacity", { ...CONFIG, visibilityExtensionSeconds: 60 })).to.equal(60);
  });

  it("calls a GPU booting only within the grace after its launch", () => {
    const launch = new Date("2026-11-24T10:00:00Z");
    expect(stillBooting(launch, launch.getTime() + 599_000, CONFIG)).to.equal(true);
    expect(stillBooting(launch, launch.getTime() + 600_000, CONFIG)).to.equal(false);
    expect(stillBooting(undefined, launch.getTime(), CONFIG)).to.equal(false);
  });
});
