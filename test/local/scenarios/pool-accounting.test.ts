/**
 * The pool scenario's count of refill triggers handled (local/scenarios/pool.ts): one per
 * message, however many lines a redelivered trigger logged.
 */
import { expect } from "chai";
import type { LogLine } from "../../../local/scenarios/logs";
import { claimSettings, triggersHandled } from "../../../local/scenarios/pool";

const completed = (runId: string): LogLine => ({ step: "refill_completed", resource_class: "gpu-small", run_id: runId, advertised: 2 });
const leaseHeld = (runId: string): LogLine => ({ step: "refill_lease_held", resource_class: "gpu-small", run_id: runId, holder: "m-0" });
const shared = (messageId: string): LogLine => ({ step: "refill_shared_run", resource_class: "gpu-small", message_id: messageId });

describe("pool scenario: refill triggers handled (pure)", () => {
  const cases: Array<{ title: string; steps: LogLine[]; handled: number }> = [
    { title: "nothing logged", steps: [], handled: 0 },
    { title: "one run, one skip, one shared run", steps: [completed("m-1"), leaseHeld("m-2"), shared("m-3")], handled: 3 },
    {
      title: "a trigger redelivered after its run completed: two lines, one message",
      steps: [completed("m-1"), completed("m-1"), completed("m-2")],
      handled: 2,
    },
    { title: "a skip, then the same trigger's run on its redelivery", steps: [leaseHeld("m-1"), completed("m-1")], handled: 1 },
    {
      title: "lines of other steps are not triggers",
      steps: [{ step: "pool_counted", resource_class: "gpu-small" }, { step: "message_quarantined" }, { step: "constructor" }, {}],
      handled: 0,
    },
    {
      title: "a line without its id counts on its own (an over-count shows, a loss cannot hide)",
      steps: [{ step: "refill_completed" }, { step: "refill_completed" }, completed("m-1")],
      handled: 3,
    },
  ];
  for (const { title, steps, handled } of cases) it(title, () => expect(triggersHandled(steps)).to.equal(handled));
});

describe("local/scenarios/pool: claimSettings, from the recorded stack outputs (pure)", () => {
  it("reads poolClaimSettings as the program published it", () => {
    const topology = { stackOutputs: { poolClaimSettings: { lockTtlSeconds: 900, requeueDelaySeconds: 5, tolerance: 5 } } };
    expect(claimSettings(topology)).to.deep.equal({ lockTtlSeconds: 900, requeueDelaySeconds: 5, tolerance: 5 });
  });

  const broken = [
    { title: "no stack outputs recorded", topology: {} },
    { title: "a setting missing", topology: { stackOutputs: { poolClaimSettings: { lockTtlSeconds: 900, requeueDelaySeconds: 5 } } } },
    {
      title: "a setting not a whole number",
      topology: { stackOutputs: { poolClaimSettings: { lockTtlSeconds: "900", requeueDelaySeconds: 5, tolerance: 5 } } },
    },
  ];
  for (const b of broken) {
    it(`refuses ${b.title}, naming the output`, () => {
      expect(() => claimSettings(b.topology)).to.throw(/poolClaimSettings\./);
    });
  }
});
