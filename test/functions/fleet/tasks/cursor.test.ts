import { type AttributeValue, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { expect } from "chai";
import { CURSOR_TTL_SECONDS, readCursor, writeCursor } from "../../../../functions/fleet/tasks/cursor";
import { awsError, TABLE } from "../../helpers/fleet-deps";
import { activeJobs, harness, NOW } from "../../helpers/fleet-tasks";

const KEY = "housekeeping-cursor#stale_ssm";
const QUERY = "/runs-fleet/dev/runners";
const NOW_SECONDS = NOW.getTime() / 1000;

describe("housekeeping sweep cursors (jobs-table items)", () => {
  it("live for six hours: the item's TTL and the age after which a cursor is not used", () => {
    expect(CURSOR_TTL_SECONDS).to.equal(21_600);
  });

  describe("readCursor", () => {
    const cases: Array<{ title: string; item: Record<string, AttributeValue> | undefined; position: string | undefined }> = [
      { title: "no cursor item", item: undefined, position: undefined },
      {
        title: "a live cursor for this query",
        item: { query: { S: QUERY }, position: { S: "token-2" }, expires_at: { N: String(NOW_SECONDS + 1) } },
        position: "token-2",
      },
      {
        title: "a cursor saved at the end of a pass (no position)",
        item: { query: { S: QUERY }, expires_at: { N: String(NOW_SECONDS + 60) } },
        position: undefined,
      },
      {
        title: "a cursor for another query",
        item: { query: { S: "/other" }, position: { S: "token-2" }, expires_at: { N: String(NOW_SECONDS + 60) } },
        position: undefined,
      },
      { title: "a cursor without a query", item: { position: { S: "token-2" }, expires_at: { N: String(NOW_SECONDS + 60) } }, position: undefined },
      {
        title: "a cursor whose TTL is now",
        item: { query: { S: QUERY }, position: { S: "token-2" }, expires_at: { N: String(NOW_SECONDS) } },
        position: undefined,
      },
      { title: "a cursor without a TTL", item: { query: { S: QUERY }, position: { S: "token-2" } }, position: undefined },
    ];
    for (const c of cases) {
      it(`${c.title}: ${c.position ?? "from the top"}, read consistently, nothing logged`, async () => {
        // Prepare
        const t = harness();
        const table = activeJobs(t, []);
        if (c.item !== undefined) table.cursors.set(KEY, { job_id: { S: KEY }, ...c.item });
        // Act
        const position = await readCursor(t.deps, "stale_ssm", QUERY);
        // Assess
        expect(position).to.equal(c.position);
        expect(t.dynamodbMock.commandCalls(GetItemCommand).map((x) => x.args[0].input)).to.deep.equal([
          { TableName: TABLE, Key: { job_id: { S: KEY } }, ConsistentRead: true },
        ]);
        expect(t.logger.entries).to.deep.equal([]);
      });
    }

    it("an unreadable cursor: from the top, logged once as a warning with the task and the error", async () => {
      // Prepare
      const t = harness();
      t.dynamodbMock.on(GetItemCommand).rejects(awsError("ProvisionedThroughputExceededException", "Rate exceeded"));
      // Act
      const position = await readCursor(t.deps, "pool_audit", "[]");
      // Assess
      expect(position).to.equal(undefined);
      expect(t.logger.entries.map((e) => [e.level, e.message, e.fields])).to.deep.equal([
        [
          "warn",
          "sweep_cursor_read_failed",
          {
            step: "sweep_cursor_read_failed",
            task_type: "pool_audit",
            error: "ProvisionedThroughputExceededException: Rate exceeded",
            fallback: "from_the_top",
          },
        ],
      ]);
    });
  });

  describe("writeCursor", () => {
    it("saves the position with its query, the time and a TTL six hours on (whole seconds)", async () => {
      // Prepare
      const t = harness();
      const table = activeJobs(t, []);
      t.deps.now = () => new Date(NOW.getTime() + 999);
      // Act
      await writeCursor(t.deps, "orphaned_instances", "[filters]", "after:i-1");
      // Assess
      expect(t.dynamodbMock.commandCalls(PutItemCommand).map((x) => x.args[0].input)).to.deep.equal([
        {
          TableName: TABLE,
          Item: {
            job_id: { S: "housekeeping-cursor#orphaned_instances" },
            query: { S: "[filters]" },
            position: { S: "after:i-1" },
            updated_at: { S: "2025-11-25T12:00:00.999Z" },
            expires_at: { N: String(NOW_SECONDS + 21_600) },
          },
        },
      ]);
      expect(await readCursor(t.deps, "orphaned_instances", "[filters]")).to.equal("after:i-1");
      expect(table.cursors.size).to.equal(1);
    });

    it("the end of a pass saves the item without a position: the next run starts from the top", async () => {
      // Prepare
      const t = harness();
      activeJobs(t, []);
      // Act
      await writeCursor(t.deps, "pool_audit", '["a"]', undefined);
      // Assess
      const put = t.dynamodbMock.commandCalls(PutItemCommand)[0]!.args[0].input;
      expect(put.Item).to.deep.equal({
        job_id: { S: "housekeeping-cursor#pool_audit" },
        query: { S: '["a"]' },
        updated_at: { S: NOW.toISOString() },
        expires_at: { N: String(NOW_SECONDS + 21_600) },
      });
      expect(await readCursor(t.deps, "pool_audit", '["a"]')).to.equal(undefined);
    });

    it("a put that fails is logged once as a warning with the task and the error, and does not fail the run", async () => {
      // Prepare
      const t = harness();
      t.dynamodbMock.on(PutItemCommand).rejects(awsError("ProvisionedThroughputExceededException", "Rate exceeded"));
      // Act
      await writeCursor(t.deps, "stale_ssm", QUERY, "token-3");
      // Assess
      expect(t.logger.entries.map((e) => [e.level, e.message, e.fields])).to.deep.equal([
        [
          "warn",
          "sweep_cursor_write_failed",
          { step: "sweep_cursor_write_failed", task_type: "stale_ssm", error: "ProvisionedThroughputExceededException: Rate exceeded" },
        ],
      ]);
    });
  });
});
