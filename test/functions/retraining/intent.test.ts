import { BatchGetCommand, type BatchGetCommandInput, DeleteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import { itemOfConditionFailure } from "../../../functions/shared/conditional-write";
import {
  claimIntent,
  CLIENT_TOKEN_WINDOW_MS,
  type ClaimResult,
  completeIntent,
  type CompletionResult,
  ClaimLostError,
  launchedIntents,
  markFallback,
  releaseIntent,
  resolveClaim,
  TAKEOVER_MARGIN_MS,
} from "../../../functions/retraining/intent";
import { conditionFailed, mockedLauncherDeps } from "../helpers/retraining-deps";

const NOW = Date.parse("2024-01-01T12:00:00.000Z");

describe("retraining/intent", () => {
  describe("resolveClaim: why a claim's condition failed, from the item it failed against", () => {
    const cases: Array<[string, Record<string, unknown> | undefined, ClaimResult["kind"]]> = [
      ["launched by anyone", { status: "launched", attempt: "other", task_arn: "arn:t", launched_at: NOW - 1 }, "launched"],
      ["this attempt's own claim (its response was lost)", { status: "in_progress", attempt: "me", in_progress_until: NOW + 1 }, "claimed"],
      ["another attempt, still within its deadline", { status: "in_progress", attempt: "other", in_progress_until: NOW + 1 }, "in_progress"],
      [
        "another attempt, dead, and past the clientToken window",
        { status: "in_progress", attempt: "other", in_progress_until: NOW - 1, first_claimed_at: NOW - 2 * CLIENT_TOKEN_WINDOW_MS },
        "outcome_unknown",
      ],
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

    const result = await claimIntent(t.deps.db, "retraining-intent", {
      originMessageId: "m1",
      attempt: "me",
      modelName: "M",
      jobId: "j",
      trigger: "manual",
      nowMs: NOW,
      inProgressUntil: NOW + 30_000,
      retentionSeconds: 100,
    });

    expect(result).to.deep.equal({ kind: "claimed", takeover: false, fallback: false });
    const input = t.dbMock.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.ReturnValuesOnConditionCheckFailure).to.equal("ALL_OLD");
    expect(input?.UpdateExpression).to.include("first_claimed_at = if_not_exists(first_claimed_at, :now)");
    expect(input?.ExpressionAttributeValues).to.deep.include({
      ":window_start": NOW - (CLIENT_TOKEN_WINDOW_MS - TAKEOVER_MARGIN_MS),
      ":ttl": NOW / 1000 + 100,
    });
  });

  it("a failed condition's item arrives in wire form and is unmarshalled", () => {
    expect(itemOfConditionFailure(conditionFailed({ attempt: "me", in_progress_until: 5 }))).to.deep.equal({ attempt: "me", in_progress_until: 5 });
    expect(itemOfConditionFailure(conditionFailed())).to.equal(undefined);
  });

  describe("resolveClaim: exactly what a failed claim found", () => {
    const launchedItem = {
      origin_message_id: "o1",
      status: "launched",
      attempt: "other",
      task_arn: "arn:t",
      job_id: "j1",
      model_name: "M",
      trigger: "manual",
      launched_at: NOW - 1,
    };
    const cases: Array<[string, Record<string, unknown> | undefined, ClaimResult]> = [
      [
        "a launched item, as the launch it names",
        launchedItem,
        { kind: "launched", intent: { originMessageId: "o1", taskArn: "arn:t", jobId: "j1", modelName: "M", trigger: "manual", launchedAt: NOW - 1 } },
      ],
      [
        "a launched item missing its descriptive fields: empty, never another type",
        { status: "launched", task_arn: "arn:t", job_id: 7 },
        { kind: "launched", intent: { originMessageId: "", taskArn: "arn:t", jobId: "", modelName: "", trigger: "" as "manual", launchedAt: Number.NaN } },
      ],
      [
        "'launched' without a task ARN is no launch",
        { status: "launched", attempt: "other", in_progress_until: NOW + 1 },
        { kind: "in_progress", attempt: "other", until: NOW + 1 },
      ],
      [
        "a task ARN on an item not launched is no launch",
        { status: "in_progress", task_arn: "arn:t", attempt: "other", in_progress_until: NOW + 1 },
        { kind: "in_progress", attempt: "other", until: NOW + 1 },
      ],
      [
        "this attempt's own claim: claimed, and no takeover",
        { status: "in_progress", attempt: "me", in_progress_until: NOW + 1 },
        { kind: "claimed", takeover: false, fallback: false },
      ],
      [
        "this attempt's own claim, turned to FARGATE: claimed with the fallback",
        { status: "in_progress", attempt: "me", in_progress_until: NOW + 1, fallback: "FARGATE" },
        { kind: "claimed", takeover: false, fallback: true },
      ],
      ["no item: someone was there; asked again now", undefined, { kind: "in_progress", attempt: "", until: NOW }],
      [
        "another attempt whose deadline is exactly now is still live",
        { status: "in_progress", attempt: "other", in_progress_until: NOW, first_claimed_at: NOW - 1 },
        { kind: "in_progress", attempt: "other", until: NOW },
      ],
      [
        "another attempt without a deadline is never taken for dead",
        { status: "in_progress", attempt: "other", first_claimed_at: NOW - 2 * CLIENT_TOKEN_WINDOW_MS },
        { kind: "in_progress", attempt: "other", until: Number.NaN },
      ],
      [
        "another attempt with a null deadline is never taken for dead",
        { status: "in_progress", attempt: "other", in_progress_until: null, first_claimed_at: NOW - 2 * CLIENT_TOKEN_WINDOW_MS },
        { kind: "in_progress", attempt: "other", until: Number.NaN },
      ],
      [
        "a dead attempt past the window, with when it was first claimed",
        { status: "in_progress", attempt: 3, in_progress_until: NOW - 1, first_claimed_at: NOW - 2 * CLIENT_TOKEN_WINDOW_MS },
        { kind: "outcome_unknown", firstClaimedAt: NOW - 2 * CLIENT_TOKEN_WINDOW_MS },
      ],
    ];
    for (const [label, old, result] of cases) {
      it(label, () => {
        expect(resolveClaim(old, "me", NOW)).to.deep.equal(result);
      });
    }
  });

  it("the claim's UpdateItem: sets the attempt and its deadline, admits a new origin or a dead claim inside the clientToken window", async () => {
    const t = mockedLauncherDeps();
    t.dbMock.on(UpdateCommand).resolves({ Attributes: { attempt: "dead" } });

    const result = await claimIntent(t.deps.db, "retraining-intent", {
      originMessageId: "m1",
      attempt: "me",
      modelName: "M",
      jobId: "j",
      trigger: "manual",
      nowMs: NOW,
      inProgressUntil: NOW + 30_000,
      retentionSeconds: 100,
    });

    expect(result).to.deep.equal({ kind: "claimed", takeover: true, fallback: false });
    expect(t.dbMock.commandCalls(UpdateCommand)[0]?.args[0].input).to.deep.equal({
      TableName: "retraining-intent",
      Key: { origin_message_id: "m1" },
      UpdateExpression:
        "SET #status = :in_progress, #attempt = :me, claimed_at = :now, in_progress_until = :until, first_claimed_at = if_not_exists(first_claimed_at, :now), model_name = :model, job_id = :job, #trigger = :trigger, expires_at = :ttl",
      ConditionExpression: "attribute_not_exists(#key) OR (#status = :in_progress AND in_progress_until < :now AND first_claimed_at > :window_start)",
      ExpressionAttributeNames: { "#key": "origin_message_id", "#status": "status", "#attempt": "attempt", "#trigger": "trigger" },
      ExpressionAttributeValues: {
        ":in_progress": "in_progress",
        ":me": "me",
        ":now": NOW,
        ":until": NOW + 30_000,
        ":window_start": NOW - (CLIENT_TOKEN_WINDOW_MS - TAKEOVER_MARGIN_MS),
        ":model": "M",
        ":job": "j",
        ":trigger": "manual",
        ":ttl": NOW / 1000 + 100,
      },
      ReturnValues: "ALL_OLD",
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    });
  });

  describe("completeIntent: marks the origin launched, if the claim is still this attempt's", () => {
    const completion = { originMessageId: "m1", attempt: "me", taskArn: "arn:t", nowMs: NOW, retentionSeconds: 100 };

    it("is one UpdateItem setting the launch and the TTL afresh and dropping the deadline, conditional on the attempt", async () => {
      const t = mockedLauncherDeps();
      t.dbMock.on(UpdateCommand).resolves({});

      expect(await completeIntent(t.deps.db, "retraining-intent", completion)).to.deep.equal({ kind: "completed" });
      expect(t.dbMock.commandCalls(UpdateCommand)[0]?.args[0].input).to.deep.equal({
        TableName: "retraining-intent",
        Key: { origin_message_id: "m1" },
        UpdateExpression: "SET #status = :launched, task_arn = :task_arn, launched_at = :now, expires_at = :ttl REMOVE in_progress_until",
        ConditionExpression: "#attempt = :me",
        ExpressionAttributeNames: { "#status": "status", "#attempt": "attempt" },
        ExpressionAttributeValues: { ":launched": "launched", ":task_arn": "arn:t", ":now": NOW, ":ttl": NOW / 1000 + 100, ":me": "me" },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      });
    });

    const outcomes: Array<[string, Error, CompletionResult]> = [
      ["its own earlier try applied (a lost response)", conditionFailed({ attempt: "me", status: "launched" }), { kind: "completed" }],
      [
        "another attempt took the claim over",
        conditionFailed({ attempt: "other", status: "in_progress" }),
        { kind: "superseded", by: "other", status: "in_progress" },
      ],
      ["the item is gone", conditionFailed(), { kind: "superseded", by: "", status: "" }],
    ];
    for (const [label, error, result] of outcomes) {
      it(`${label} → ${result.kind}`, async () => {
        const t = mockedLauncherDeps();
        t.dbMock.on(UpdateCommand).rejects(error);

        expect(await completeIntent(t.deps.db, "retraining-intent", completion)).to.deep.equal(result);
      });
    }
  });

  describe("markFallback: records the turn to FARGATE on this attempt's claim, before the retry's RunTask", () => {
    const cases: Array<{ label: string; arrange: (t: ReturnType<typeof mockedLauncherDeps>) => void; expected: "ok" | "lost" }> = [
      { label: "the claim is this attempt's: written", arrange: (t) => t.dbMock.on(UpdateCommand).resolves({}), expected: "ok" },
      {
        label: "its answer was lost and the retry finds its own mark: done",
        arrange: (t) => t.dbMock.on(UpdateCommand).rejects(conditionFailed({ status: "in_progress", attempt: "me", fallback: "FARGATE" })),
        expected: "ok",
      },
      {
        label: "another attempt took the claim over: ClaimLostError (this one must not launch)",
        arrange: (t) => t.dbMock.on(UpdateCommand).rejects(conditionFailed({ status: "in_progress", attempt: "other" })),
        expected: "lost",
      },
      {
        label: "the origin was launched meanwhile: ClaimLostError",
        arrange: (t) => t.dbMock.on(UpdateCommand).rejects(conditionFailed({ status: "launched", attempt: "other", task_arn: "arn:t" })),
        expected: "lost",
      },
    ];
    for (const c of cases)
      it(c.label, async () => {
        // Prepare
        const t = mockedLauncherDeps();
        c.arrange(t);
        // Act
        const outcome = await markFallback(t.deps.db, "retraining-intent", { originMessageId: "m1", attempt: "me" }).then(
          () => "ok",
          (e: unknown) => (e instanceof ClaimLostError ? "lost" : `other: ${String(e)}`),
        );
        // Assess
        expect(outcome).to.equal(c.expected);
        expect(t.dbMock.commandCalls(UpdateCommand)[0]?.args[0].input).to.deep.include({
          ConditionExpression: "#attempt = :me AND #status = :in_progress",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        });
      });
  });

  describe("releaseIntent: gives up this attempt's claim after a failed launch", () => {
    const mine = {
      ConditionExpression: "#attempt = :me AND #status = :in_progress",
      ExpressionAttributeNames: { "#attempt": "attempt", "#status": "status" },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    };

    it("definite (ECS started nothing): deletes the claim, if it is still this attempt's and in progress", async () => {
      const t = mockedLauncherDeps();
      t.dbMock.on(DeleteCommand).resolves({});

      await releaseIntent(t.deps.db, "retraining-intent", { originMessageId: "m1", attempt: "me", definite: true });

      expect(t.dbMock.commandCalls(DeleteCommand)[0]?.args[0].input).to.deep.equal({
        TableName: "retraining-intent",
        Key: { origin_message_id: "m1" },
        ...mine,
        ExpressionAttributeValues: { ":me": "me", ":in_progress": "in_progress" },
      });
    });

    it("not definite (RunTask may have applied): keeps the claim but expires it at once, under the same condition", async () => {
      const t = mockedLauncherDeps();
      t.dbMock.on(UpdateCommand).resolves({});

      await releaseIntent(t.deps.db, "retraining-intent", { originMessageId: "m1", attempt: "me", definite: false });

      expect(t.dbMock.commandCalls(UpdateCommand)[0]?.args[0].input).to.deep.equal({
        TableName: "retraining-intent",
        Key: { origin_message_id: "m1" },
        UpdateExpression: "SET in_progress_until = :zero",
        ...mine,
        ExpressionAttributeValues: { ":me": "me", ":in_progress": "in_progress", ":zero": 0 },
      });
    });
  });

  describe("launchedIntents: one consistent read of the batch's origins", () => {
    const launched = (origin: string) => ({
      origin_message_id: origin,
      status: "launched",
      task_arn: `arn:${origin}`,
      job_id: "j",
      model_name: "M",
      trigger: "manual",
      launched_at: NOW,
    });
    /** BatchGetItem over a table where the origins in `done` are launched and the rest claimed only: it answers exactly the keys asked. */
    const table = (done: Set<string>) => (input: BatchGetCommandInput) => {
      const keys = (input.RequestItems?.["retraining-intent"]?.Keys ?? []) as Array<{ origin_message_id: string }>;
      return {
        Responses: {
          "retraining-intent": keys.map((k) =>
            done.has(k.origin_message_id) ? launched(k.origin_message_id) : { origin_message_id: k.origin_message_id, status: "in_progress", attempt: "a" },
          ),
        },
      };
    };
    const keysAsked = (t: ReturnType<typeof mockedLauncherDeps>) =>
      t.dbMock.commandCalls(BatchGetCommand).map((c) => c.args[0].input.RequestItems?.["retraining-intent"]);

    it("past BatchGetItem's 100 keys, reads the rest in a further call; each origin once", async () => {
      const t = mockedLauncherDeps();
      const origins = Array.from({ length: 101 }, (_, i) => `o${i}`);
      t.dbMock.on(BatchGetCommand).callsFake(table(new Set(["o0", "o100"])));

      const found = await launchedIntents(t.deps.db, "retraining-intent", [...origins, "o0"]);

      const asked = keysAsked(t);
      expect(asked.map((r) => r?.Keys?.length)).to.deep.equal([100, 1]);
      expect(asked.flatMap((r) => r?.Keys)).to.deep.equal(origins.map((o) => ({ origin_message_id: o })));
      expect(asked.map((r) => r?.ConsistentRead)).to.deep.equal([true, true]);
      expect([...found.keys()]).to.deep.equal(["o0", "o100"]);
    });

    it("an empty UnprocessedKeys map means nothing is left: no second call", async () => {
      const t = mockedLauncherDeps();
      t.dbMock.on(BatchGetCommand).callsFake((input: BatchGetCommandInput) => ({ ...table(new Set(["o1"]))(input), UnprocessedKeys: {} }));

      const found = await launchedIntents(t.deps.db, "retraining-intent", ["o1"]);

      expect(t.dbMock.commandCalls(BatchGetCommand)).to.have.length(1);
      expect(found.get("o1")?.taskArn).to.equal("arn:o1");
    });

    it("asks again for the unprocessed keys only; an answer without Responses is read as none", async () => {
      const t = mockedLauncherDeps();
      t.dbMock
        .on(BatchGetCommand)
        .resolvesOnce({ UnprocessedKeys: { "retraining-intent": { Keys: [{ origin_message_id: "o2" }] } } })
        .callsFake(table(new Set(["o2"])));

      const found = await launchedIntents(t.deps.db, "retraining-intent", ["o1", "o2"]);

      expect(keysAsked(t).map((r) => r?.Keys)).to.deep.equal([[{ origin_message_id: "o1" }, { origin_message_id: "o2" }], [{ origin_message_id: "o2" }]]);
      expect([...found.keys()]).to.deep.equal(["o2"]);
    });

    it("keys still unprocessed after 3 retries fail the read, saying how many", async () => {
      const t = mockedLauncherDeps();
      t.dbMock.on(BatchGetCommand).resolves({ Responses: {}, UnprocessedKeys: { "retraining-intent": { Keys: [{ origin_message_id: "o1" }] } } });

      const error = await launchedIntents(t.deps.db, "retraining-intent", ["o1"]).then(
        () => undefined,
        (e: unknown) => e,
      );

      expect((error as Error).message).to.equal("intent table left 1 key(s) unprocessed after 3 retries");
      expect(t.dbMock.commandCalls(BatchGetCommand)).to.have.length(4);
    });
  });
});
