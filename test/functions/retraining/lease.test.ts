import { DeleteCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import { acquireLease, CAPACITY_LEASE_KEY, LeaseBusyError, leaseWindow, releaseLease, tryAcquireLease } from "../../../functions/retraining/lease";
import { conditionFailed, mockedLauncherDeps } from "../helpers/retraining-deps";

const holder = { token: "tok-1", origins: ["m1"] };

describe("retraining/lease", () => {
  const windows: Array<[string, number, { waitUntil: number; expiresAt: number }]> = [
    ["a quarter of a short remaining time", 4_000, { waitUntil: 1_000 + 1_000, expiresAt: 1_000 + 4_000 }],
    ["at most 3 s, however long the invocation has", 60_000, { waitUntil: 1_000 + 3_000, expiresAt: 1_000 + 60_000 }],
  ];
  for (const [label, remaining, window] of windows) {
    it(`waits for the lease ${label}, and holds it for the whole remaining time`, () => {
      expect(leaseWindow(1_000, remaining)).to.deep.equal(window);
    });
  }

  describe("acquireLease: retries while busy, within the wait window by the clock", () => {
    /** A lease someone else holds, and a clock that each pause moves on by the pause plus `slowBy`. */
    function busyWithClock(slowBy: number) {
      const t = mockedLauncherDeps();
      t.dbMock.on(PutCommand).rejects(conditionFailed({ model_name: CAPACITY_LEASE_KEY, holder: "other", expires_at: 99_999 }));
      let now = 0;
      const sleeps: number[] = [];
      const timing = {
        now: () => now,
        sleep: async (ms: number) => {
          sleeps.push(ms);
          now += ms + slowBy;
        },
        waitUntil: 1_000,
        expiresAt: 30_000,
      };
      return { t, timing, sleeps };
    }

    it("asks until the window's end: an attempt may fall exactly on it", async () => {
      const { t, timing, sleeps } = busyWithClock(0);

      expect(await acquireLease(t.deps.db, "retraining-state", holder, timing)).to.equal(false);

      // Attempts at 0, 250, 500, 750 and 1000 ms.
      expect(t.dbMock.commandCalls(PutCommand).map((c) => c.args[0].input.ExpressionAttributeValues?.[":now"])).to.deep.equal([0, 250, 500, 750, 1_000]);
      expect(sleeps).to.deep.equal([250, 250, 250, 250]);
    });

    it("stops early when slow pauses leave no room for another pause before the window ends", async () => {
      const { t, timing, sleeps } = busyWithClock(200);

      expect(await acquireLease(t.deps.db, "retraining-state", holder, timing)).to.equal(false);

      // Attempts at 0, 450 and 900 ms; a pause from 900 would end past 1000.
      expect(t.dbMock.commandCalls(PutCommand).map((c) => c.args[0].input.ExpressionAttributeValues?.[":now"])).to.deep.equal([0, 450, 900]);
      expect(sleeps).to.deep.equal([250, 250]);
    });
  });

  it("a failed take without the item it failed against counts as busy, not as ours", async () => {
    const t = mockedLauncherDeps();
    t.dbMock.on(PutCommand).rejects(conditionFailed());

    expect(await tryAcquireLease(t.deps.db, "retraining-state", holder, 0, 30_000)).to.equal(false);
  });

  it("only an expected condition failure is a busy lease: any other DynamoDB error propagates", async () => {
    const t = mockedLauncherDeps();
    t.dbMock.on(PutCommand).rejects(Object.assign(new Error("throttled"), { name: "ProvisionedThroughputExceededException" }));

    const error = await tryAcquireLease(t.deps.db, "retraining-state", holder, 0, 30_000).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).to.have.property("name", "ProvisionedThroughputExceededException");
  });

  it("releases with a DeleteItem of the lease key, conditional on this holder's token", async () => {
    const t = mockedLauncherDeps();
    t.dbMock.on(DeleteCommand).resolves({});

    expect(await releaseLease(t.deps.db, "retraining-state", holder)).to.equal(true);

    expect(t.dbMock.commandCalls(DeleteCommand)[0]?.args[0].input).to.deep.equal({
      TableName: "retraining-state",
      Key: { model_name: "#capacity-lease" },
      ConditionExpression: "#holder = :me",
      ExpressionAttributeNames: { "#holder": "holder" },
      ExpressionAttributeValues: { ":me": "tok-1" },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    });
  });

  it("LeaseBusyError names itself and says what is busy", () => {
    const error = new LeaseBusyError();
    expect(error.name).to.equal("LeaseBusyError");
    expect(error.message).to.equal("capacity lease busy: another launcher invocation is counting and launching");
  });
});
