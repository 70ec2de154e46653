import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import { itemOfConditionFailure } from "../../../functions/shared/conditional-write";
import { claimIntent, CLIENT_TOKEN_WINDOW_MS, type ClaimResult, resolveClaim, TAKEOVER_MARGIN_MS } from "../../../functions/retraining/intent";
import { conditionFailed, mockedLauncherDeps } from "../helpers/retraining-deps";

const NOW = Date.parse("2024-01-01T12:00:00.000Z");

describe("retraining/intent", () => {
  describe("resolveClaim: why a claim's condition failed, from the item it failed against", () => {
    const cases: Array<[string, Record<string, unknown> | undefined, ClaimResult["kind"]]> = [
      ["launched by anyone", { status: "launched", attempt: "other", task_arn: "arn:t", launched_at: NOW - 1 }, "launched"],
      ["this attempt's own claim (its response was lost)", { status: "in_progress", attempt: "me", in_progress_until: NOW + 1 }, "claimed"],
      ["another attempt, still within its deadline", { status: "in_progress", attempt: "other", in_progress_until: NOW + 1 }, "in_progress"],
      ["another attempt, dead, and past the clientToken window", { status: "in_progress", attempt: "other", in_progress_until: NOW - 1, first_claimed_at: NOW - 2 * CLIENT_TOKEN_WINDOW_MS }, "outcome_unknown"],
      ["no item (released in between)", undefined, "in_progress"],
    ];
    for (const [label, old, kind] of cases) {
      it(`${label} → ${kind}`, () => {
        expect(resolveClaim(old, "me", NOW).kind).to.equal(kind);
      });
    }
  });

  it("claims with a conditional UpdateItem that asks for the old item on failure and keeps first_claimed_at across takeovers", async () => {
    const t = mockedLauncherDeps();
    t.dbMock.on(UpdateCommand).resolves({});

    const result = await claimIntent(t.deps.db, "retraining-intent", { originMessageId: "m1", attempt: "me", modelName: "M", jobId: "j", trigger: "manual", nowMs: NOW, inProgressUntil: NOW + 30_000, retentionSeconds: 100 });

    expect(result).to.deep.equal({ kind: "claimed", takeover: false });
    const input = t.dbMock.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.ReturnValuesOnConditionCheckFailure).to.equal("ALL_OLD");
    expect(input?.UpdateExpression).to.include("first_claimed_at = if_not_exists(first_claimed_at, :now)");
    expect(input?.ExpressionAttributeValues).to.deep.include({ ":window_start": NOW - (CLIENT_TOKEN_WINDOW_MS - TAKEOVER_MARGIN_MS), ":ttl": NOW / 1000 + 100 });
  });

  it("a failed condition's item arrives in wire form and is unmarshalled", () => {
    expect(itemOfConditionFailure(conditionFailed({ attempt: "me", in_progress_until: 5 }))).to.deep.equal({ attempt: "me", in_progress_until: 5 });
    expect(itemOfConditionFailure(conditionFailed())).to.equal(undefined);
  });
});
