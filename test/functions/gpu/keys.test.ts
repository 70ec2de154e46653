import { expect } from "chai";
import {
  applyWrite,
  type Claim,
  type ClaimResult,
  claimCondition,
  type Condition,
  dynamoKeyStore,
  evaluateCondition,
  fencedBy,
  judgeClaim,
  KEY_RETENTION_SECONDS,
  KeyClaims,
  type KeyItem,
  MAX_STORED_RESPONSE_BYTES,
  MemoryKeyStore,
  writeInput,
} from "../../../functions/gpu/keys";
import { conditionFailed } from "../helpers/dynamodb-errors";
import { evaluate, FakeKeyTable, type TableFault } from "../helpers/gpu-key-table";

const T0 = 1_800_000_000_000;
const LEASE_MS = 60_000;
const ME = "i-me";
const OTHER = "i-other";

const item = (over: Partial<KeyItem> = {}): KeyItem => ({
  window_key: "k",
  state: "claimed",
  holder: OTHER,
  claim_token: "their-token",
  lease_expires_at: T0 + 10_000,
  expires_at: 1,
  ...over,
});

function claimsOn(table: FakeKeyTable, clock: { now: number }, tokens: string[], holder = ME): KeyClaims {
  return new KeyClaims({
    store: dynamoKeyStore(table.db, "gpu-keys"),
    holder,
    leaseMs: LEASE_MS,
    now: () => clock.now,
    newToken: () => tokens.shift() ?? "token-exhausted",
    resend: { rounds: 4, baseDelayMs: 0, sleep: async () => undefined },
  });
}

describe("gpu gateway: key claims (functions/gpu/keys.ts)", () => {
  describe("conditions as data (pure)", () => {
    const conditions: Array<[string, Condition]> = [
      ["claim at T0", claimCondition(T0)],
      ["fenced by their token", fencedBy("their-token")],
      ["fenced by mine", fencedBy("mine")],
      ["takeover of a claimed item", { op: "and", of: [{ op: "eq", attr: "state", value: "claimed" }, fencedBy("their-token")] }],
    ];
    const items: Array<[string, KeyItem | undefined]> = [
      ["no item", undefined],
      ["claimed, live lease", item()],
      ["claimed, lease expired", item({ lease_expires_at: T0 - 1 })],
      ["claimed, lease ends exactly now", item({ lease_expires_at: T0 })],
      ["done", item({ state: "done", lease_expires_at: T0 - 1 })],
    ];
    it("the claim condition holds for no item and for an expired claim only, never for a done key", () => {
      const holds = items.map(([name, i]) => [name, evaluateCondition(claimCondition(T0), i)]);
      expect(holds).to.deep.equal([
        ["no item", true],
        ["claimed, live lease", false],
        ["claimed, lease expired", true],
        ["claimed, lease ends exactly now", false],
        ["done", false],
      ]);
    });
    for (const [cname, condition] of conditions)
      it(`the expression sent for "${cname}" judges every item as the data does`, () => {
        const input = writeInput("t", { kind: "delete", key: "k", condition });
        for (const [iname, i] of items) {
          const sent = evaluate(
            input.ConditionExpression!,
            i as Record<string, unknown> | undefined,
            input.ExpressionAttributeNames!,
            input.ExpressionAttributeValues!,
          );
          expect(sent, `${cname} on ${iname}`).to.equal(evaluateCondition(condition, i));
        }
      });

    it("judges a failed claim by the item it met", () => {
      const cases: Array<[string, KeyItem | undefined, ReturnType<typeof judgeClaim>["kind"], boolean?]> = [
        ["no item (deleted in between)", undefined, "again"],
        ["our own token (a lost answer)", item({ claim_token: "mine", holder: ME }), "ours"],
        ["done by anyone", item({ state: "done" }), "done"],
        ["claimed by another, live", item(), "held", false],
        ["claimed by this instance with another token (abandoned)", item({ holder: ME }), "held", true],
      ];
      for (const [name, old, kind, mine] of cases) {
        const d = judgeClaim(old, "mine", ME);
        expect(d.kind, name).to.equal(kind);
        if (d.kind === "held") expect(d.mine, name).to.equal(mine);
      }
    });

    it("writes placeholders for every name (state is a reserved word) and leaves undefined values out", () => {
      const input = writeInput("t", { kind: "update", key: "k", condition: fencedBy("x"), set: { state: "done", response: undefined }, remove: ["response"] });
      expect(input).to.deep.include({ TableName: "t", Key: { window_key: "k" }, ConditionExpression: "#claim_token = :v1" });
      expect((input as { UpdateExpression: string }).UpdateExpression).to.equal("SET #state = :v0 REMOVE #response");
    });

    it("applyWrite creates, updates, removes and deletes", () => {
      const created = applyWrite(undefined, { kind: "update", key: "k", condition: claimCondition(T0), set: { state: "claimed", holder: ME } });
      expect(created).to.deep.equal({ window_key: "k", state: "claimed", holder: ME });
      const removed = applyWrite(item({ response: "x" }), { kind: "update", key: "k", condition: fencedBy("x"), set: {}, remove: ["response"] });
      expect(removed).to.not.have.property("response");
      expect(applyWrite(item(), { kind: "delete", key: "k", condition: fencedBy("x") })).to.equal(undefined);
    });

    it("the memory store judges as the table does", async () => {
      const store = new MemoryKeyStore();
      expect((await store.write({ kind: "update", key: "k", condition: claimCondition(T0), set: { state: "claimed", claim_token: "a" } })).applied).to.equal(
        true,
      );
      const again = await store.write({ kind: "update", key: "k", condition: { op: "absent" }, set: {} });
      expect(again).to.deep.equal({ applied: false, old: { window_key: "k", state: "claimed", claim_token: "a" } });
      expect((await store.write({ kind: "delete", key: "k", condition: fencedBy("a") })).applied).to.equal(true);
      expect(store.items.size).to.equal(0);
    });
  });

  describe("claim, against the key table's expressions", () => {
    interface Case {
      name: string;
      before?: KeyItem;
      faults?: TableFault[];
      expect: ClaimResult["kind"];
      recovered?: boolean;
      holderAfter?: string;
      tokenAfter?: string;
    }
    const cases: Case[] = [
      { name: "a fresh key is claimed", expect: "claimed", recovered: false, holderAfter: ME, tokenAfter: "mine" },
      { name: "a done key answers with its stored response", before: item({ state: "done", response: '{"y":1}', response_status: 200 }), expect: "done" },
      { name: "a key claimed elsewhere under a live lease is held", before: item(), expect: "held", holderAfter: OTHER, tokenAfter: "their-token" },
      {
        name: "an expired claim elsewhere is taken over",
        before: item({ lease_expires_at: T0 - 1 }),
        expect: "claimed",
        recovered: false,
        holderAfter: ME,
        tokenAfter: "mine",
      },
      {
        name: "a live claim of this instance (abandoned) is taken over by token",
        before: item({ holder: ME, claim_token: "old" }),
        expect: "claimed",
        recovered: true,
        holderAfter: ME,
        tokenAfter: "mine",
      },
      {
        name: "a claim whose answer was lost is resolved by its own token",
        faults: ["lost"],
        expect: "claimed",
        recovered: true,
        holderAfter: ME,
        tokenAfter: "mine",
      },
      {
        name: "a claim that failed before applying is re-sent",
        faults: ["unapplied", "unapplied"],
        expect: "claimed",
        recovered: false,
        holderAfter: ME,
        tokenAfter: "mine",
      },
    ];
    for (const c of cases)
      it(c.name, async () => {
        // Prepare
        const table = new FakeKeyTable();
        if (c.before) table.put({ ...c.before });
        table.faults.push(...(c.faults ?? []));
        const claims = claimsOn(table, { now: T0 }, ["mine"]);
        // Act
        const out = await claims.claim("k");
        // Assess
        expect(out.kind).to.equal(c.expect);
        if (out.kind === "claimed") expect(out.recovered).to.equal(c.recovered);
        if (out.kind === "done") expect(out).to.deep.include({ response: '{"y":1}', responseStatus: 200 });
        if (c.holderAfter) expect(table.item("k")).to.deep.include({ holder: c.holderAfter });
        if (c.tokenAfter) expect(table.item("k")).to.deep.include({ claim_token: c.tokenAfter });
        if (c.expect === "claimed")
          expect(table.item("k")).to.deep.equal({
            window_key: "k",
            state: "claimed",
            holder: ME,
            claim_token: "mine",
            lease_expires_at: T0 + LEASE_MS,
            expires_at: Math.floor(T0 / 1000) + KEY_RETENTION_SECONDS,
          });
      });

    it("a claim failed with no item returned (deleted in between) claims again on the next round", async () => {
      const table = new FakeKeyTable();
      table.faults.push(() => conditionFailed());
      const out = await claimsOn(table, { now: T0 }, ["mine"]).claim("k");
      expect(out.kind).to.equal("claimed");
    });

    it("throws when the table fails on every re-send", async () => {
      const table = new FakeKeyTable();
      table.down = true;
      let error: unknown;
      await claimsOn(table, { now: T0 }, ["mine"])
        .claim("k")
        .catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(Error);
      expect(table.mock.calls()).to.have.length(4);
    });
  });

  describe("done, extend and release, fenced by the claim's token", () => {
    const mine: Claim = { key: "k", token: "mine" };
    const claimedByMe = () => item({ holder: ME, claim_token: "mine", lease_expires_at: T0 + LEASE_MS });

    it("markDone stores the answer, its status, done_at and a fresh TTL", async () => {
      const table = new FakeKeyTable();
      table.put(claimedByMe());
      const out = await claimsOn(table, { now: T0 + 5 }, []).markDone(mine, 201, '{"ok":true}');
      expect(out).to.deep.equal({ kind: "done", recovered: false, stored: true });
      expect(table.item("k")).to.deep.include({
        state: "done",
        response: '{"ok":true}',
        response_status: 201,
        done_at: T0 + 5,
        expires_at: Math.floor((T0 + 5) / 1000) + KEY_RETENTION_SECONDS,
      });
    });

    it("markDone keeps no answer larger than 32 KiB", async () => {
      const table = new FakeKeyTable();
      table.put(claimedByMe());
      const out = await claimsOn(table, { now: T0 }, []).markDone(mine, 200, "x".repeat(MAX_STORED_RESPONSE_BYTES + 1));
      expect(out).to.deep.include({ kind: "done", stored: false });
      expect(table.item("k")).to.not.have.property("response");
    });

    it("markDone whose answer was lost is re-sent and still done", async () => {
      const table = new FakeKeyTable();
      table.put(claimedByMe());
      table.faults.push("lost");
      const out = await claimsOn(table, { now: T0 }, []).markDone(mine, 200, "{}");
      expect(out.kind).to.equal("done");
      expect(table.mock.calls()).to.have.length(2);
    });

    it("markDone is refused once another instance took the key over", async () => {
      const table = new FakeKeyTable();
      table.put(item());
      expect(await claimsOn(table, { now: T0 }, []).markDone(mine, 200, "{}")).to.deep.equal({ kind: "refused", holder: OTHER, state: "claimed" });
    });

    it("release deletes the item; a lost answer (no item left) is still a release; another's claim is not deleted", async () => {
      const table = new FakeKeyTable();
      table.put(claimedByMe());
      table.faults.push("lost");
      expect(await claimsOn(table, { now: T0 }, []).release(mine)).to.deep.equal({ kind: "released" });
      expect(table.items.has("k")).to.equal(false);
      table.put(item());
      expect(await claimsOn(table, { now: T0 }, []).release(mine)).to.deep.equal({ kind: "lost", holder: OTHER, state: "claimed" });
      expect(table.items.has("k")).to.equal(true);
    });

    it("extend moves the lease on while the claim is ours, and answers false once it is not", async () => {
      const table = new FakeKeyTable();
      table.put(claimedByMe());
      expect(await claimsOn(table, { now: T0 + 1000 }, []).extend(mine)).to.equal(true);
      expect(table.item("k")).to.deep.include({ lease_expires_at: T0 + 1000 + LEASE_MS });
      table.put(item());
      expect(await claimsOn(table, { now: T0 + 1000 }, []).extend(mine)).to.equal(false);
    });
  });
});
