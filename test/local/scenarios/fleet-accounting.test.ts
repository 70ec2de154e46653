/**
 * The fleet scenario's judgement of the termination consumer's lines (local/scenarios/fleet.ts):
 * duplicates are counted per message, and a completion reported twice is named.
 */
import { expect } from "chai";
import { judgeTerminations } from "../../../local/scenarios/fleet";
import type { LogLine } from "../../../local/scenarios/logs";

const line = (messageId: string, jobId: string, duplicate: boolean): LogLine => ({
  step: "termination_processed",
  message_id: messageId,
  job_id: jobId,
  duplicate,
});
const sent = new Set(["m-1", "m-2", "m-1b"]);

describe("fleet scenario: termination lines judged (pure)", () => {
  const cases: Array<{ title: string; lines: LogLine[]; duplicateMessages: number; reportedTwice: string[] }> = [
    {
      title: "two jobs and one copy, each delivered once",
      lines: [line("m-1", "j-1", false), line("m-2", "j-2", false), line("m-1b", "j-1", true)],
      duplicateMessages: 1,
      reportedTwice: [],
    },
    {
      title: "the copy delivered three times on a loaded machine is still one duplicate",
      lines: [line("m-1", "j-1", false), line("m-1b", "j-1", true), line("m-1b", "j-1", true), line("m-1b", "j-1", true)],
      duplicateMessages: 1,
      reportedTwice: [],
    },
    {
      title: "an original delivered again after it reported is not a duplicate message",
      lines: [line("m-1", "j-1", false), line("m-1", "j-1", true)],
      duplicateMessages: 0,
      reportedTwice: [],
    },
    {
      title: "the copy may win the race: then the original is the duplicate",
      lines: [line("m-1b", "j-1", false), line("m-1", "j-1", true)],
      duplicateMessages: 1,
      reportedTwice: [],
    },
    {
      title: "two deliveries that both reported one job",
      lines: [line("m-1", "j-1", false), line("m-1b", "j-1", false)],
      duplicateMessages: 0,
      reportedTwice: ["j-1"],
    },
    { title: "a redelivery that reported again", lines: [line("m-2", "j-2", false), line("m-2", "j-2", false)], duplicateMessages: 0, reportedTwice: ["j-2"] },
    {
      title: "lines of messages the scenario did not send are ignored",
      lines: [line("other", "j-9", false), line("other", "j-9", false), line("x", "j-9", true)],
      duplicateMessages: 0,
      reportedTwice: [],
    },
  ];
  for (const { title, lines, duplicateMessages, reportedTwice } of cases)
    it(title, () => expect(judgeTerminations(lines, sent)).to.deep.equal({ duplicateMessages, reportedTwice }));
});
