import { UpdateItemCommand, type UpdateItemCommandInput } from "@aws-sdk/client-dynamodb";
import { expect } from "chai";
import { claimCompletionReport } from "../../../functions/fleet/complete-job";
import { DEFAULT_RESEND } from "../../../functions/shared/resend";
import { conditionFailed } from "../helpers/dynamodb-errors";
import { mockedClients, TABLE } from "../helpers/fleet-deps";
import { FakeJobItems } from "../helpers/fleet-fakes";

const NOW_SECONDS = 1_764_064_800;
const writer = { messageId: "m-1", attempt: "attempt-1" };
const noPause = { ...DEFAULT_RESEND, sleep: async (): Promise<void> => undefined };

describe("claimCompletionReport", () => {
  const cases: Array<{ title: string; reportedBy: string; claimedAt: number; lost: boolean; expected: unknown }> = [
    { title: "the pending report is claimed: mine", reportedBy: "pending", claimedAt: 0, lost: false, expected: { kind: "mine", recovered: false } },
    {
      title: "the claim applied but its answer was lost: the re-send finds this attempt's own claim, mine and recovered",
      reportedBy: "pending",
      claimedAt: 0,
      lost: true,
      expected: { kind: "mine", recovered: true },
    },
    {
      title: "another delivery claimed it first: taken, with who and when from the old item",
      reportedBy: "m-2 attempt-7",
      claimedAt: NOW_SECONDS - 5,
      lost: false,
      expected: { kind: "taken", state: { by: "m-2 attempt-7", done: false, claimedAt: String(NOW_SECONDS - 5) } },
    },
  ];
  for (const c of cases) {
    it(c.title, async () => {
      // Prepare: a completed job whose report is `reportedBy`; the first answer lost when `lost`.
      const t = mockedClients();
      const table = new FakeJobItems([
        {
          job_id: { S: "j-1" },
          status: { S: "completed" },
          completion_reported_by: { S: c.reportedBy },
          completion_report_claimed_at: { N: String(c.claimedAt) },
        },
      ]);
      let lose = c.lost ? 1 : 0;
      t.dynamodbMock.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
        const out = table.update(input, conditionFailed);
        if (lose-- > 0) throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET", $metadata: {} });
        return out;
      });
      // Act
      const claim = await claimCompletionReport(t.clients.dynamodb, TABLE, "j-1", writer, undefined, NOW_SECONDS, noPause);
      // Assess
      expect(claim).to.deep.equal(c.expected);
      expect(t.dynamodbMock.commandCalls(UpdateItemCommand)).to.have.length(c.lost ? 2 : 1);
    });
  }
});
