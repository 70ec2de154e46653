import { UpdateItemCommand, type UpdateItemCommandInput } from "@aws-sdk/client-dynamodb";
import { expect } from "chai";
import { type Claimable, claimable, claimCompletionReport, type ReportState } from "../../../functions/fleet/complete-job";
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
      expected: { kind: "taken", state: { by: "m-2 attempt-7", done: false, claimedAt: String(NOW_SECONDS - 5), deadline: undefined } },
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
      const claim = await claimCompletionReport(t.clients.dynamodb, TABLE, "j-1", writer, undefined, NOW_SECONDS, NOW_SECONDS + 30, noPause);
      // Assess
      expect(claim).to.deep.equal(c.expected);
      expect(t.dynamodbMock.commandCalls(UpdateItemCommand)).to.have.length(c.lost ? 2 : 1);
    });
  }
});

describe("claimable: which unfinished claim a delivery may take over, and from when", () => {
  const mine = "m-1 attempt-0";
  const state = (over: Partial<ReportState>): ReportState => ({ by: mine, done: false, claimedAt: String(NOW_SECONDS - 60), deadline: undefined, ...over });
  const cases: Array<{ title: string; state: ReportState; expected: Claimable | null }> = [
    { title: "the pending report: claimed at once", state: state({ by: "pending" }), expected: { previous: undefined } },
    { title: "a done report: never", state: state({ done: true }), expected: null },
    {
      title: "this message's claim whose claimant's deadline is still ahead (it may be between its claim and its done mark): not before deadline + 10 s",
      state: state({ deadline: String(NOW_SECONDS + 500) }),
      expected: { previous: mine, notBefore: NOW_SECONDS + 510 },
    },
    {
      title: "this message's claim, its deadline passed but not the 10 s margin: not before deadline + 10 s",
      state: state({ deadline: String(NOW_SECONDS - 5) }),
      expected: { previous: mine, notBefore: NOW_SECONDS + 5 },
    },
    {
      title: "this message's claim, deadline + 10 s passed (the claimant has ended): at once",
      state: state({ deadline: String(NOW_SECONDS - 10) }),
      expected: { previous: mine },
    },
    {
      title: "this message's claim without a recorded deadline (written before deadlines were): at once, as then",
      state: state({}),
      expected: { previous: mine },
    },
    {
      title: "another message's claim whose claimant has ended, younger than 15 minutes: never (its own message comes back if it emitted nothing)",
      state: state({ by: "m-2 attempt-0", deadline: String(NOW_SECONDS - 30) }),
      expected: null,
    },
    {
      title: "another message's claim 15 minutes old: at once",
      state: state({ by: "m-2 attempt-0", claimedAt: String(NOW_SECONDS - 900) }),
      expected: { previous: "m-2 attempt-0" },
    },
  ];
  for (const c of cases) {
    it(c.title, () => {
      // Prepare: delivery m-1 attempt-1 at NOW_SECONDS.
      // Act
      const may = claimable(c.state, writer, NOW_SECONDS);
      // Assess
      expect(may).to.deep.equal(c.expected);
    });
  }
});
