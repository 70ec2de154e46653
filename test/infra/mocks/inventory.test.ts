import { expect } from "chai";
import { parseStackConfig, queueBudgets } from "../../../infra/config";
import { drainedQueues, type InventoryRecord, recordedInventory } from "../../../infra/parts/inventory";
import type { PlanDocument } from "../../../plan/render";
import { trafficQueues } from "../../../local/chaos/traffic";
import { ofType as of } from "../helpers/plan-queries";
import { STACKS, stackView, useStackPlans } from "../helpers/run-plan";
import { stackConfig } from "../helpers/stack-config";

/** Every `QueueName` dimension the dashboard's body names. */
function dashboardQueueNames(doc: PlanDocument): Set<string> {
  const [dashboard] = of(doc, "aws:cloudwatch/dashboard:Dashboard");
  const names = new Set<string>();
  const walk = (v: unknown): void => {
    if (!Array.isArray(v)) {
      if (v && typeof v === "object") Object.values(v).forEach(walk);
      return;
    }
    v.forEach((x, i) => {
      if (x === "QueueName" && typeof v[i + 1] === "string") names.add(v[i + 1] as string);
      walk(x);
    });
  };
  walk(JSON.parse(String(dashboard!.inputs.dashboardBody)));
  return names;
}

/**
 * The parts own their inventory (infra/parts/inventory.ts), and every list of queues is derived
 * from it: a queue a part declares that the inventory, the dashboard, the budgets or the chaos run
 * leaves out fails here. The queues are read from the plan (each ManagedQueue and TerminalQueue
 * component), not from a list of this test's own.
 */
describe("every queue a part declares is in its inventory, on the dashboard, in the budgets and in the chaos run", function () {
  this.timeout(120_000);

  const stacks = useStackPlans();
  const inventories: Record<string, InventoryRecord[]> = {};
  before(async () => {
    for (const stack of STACKS) inventories[stack] = recordedInventory(await stackView(stack));
  });

  for (const stack of STACKS) {
    describe(`stack ${stack}`, () => {
      // Prepare: what the parts declared, by the plan.
      const declared = (type: string) =>
        of(stacks[stack]!, type)
          .map((r) => r.name)
          .sort();
      const sources = () => declared("encache:messaging:ManagedQueue");

      it("lists every part, and in each its source and terminal queues and ECS services, exactly as declared", () => {
        // Act
        const records = inventories[stack]!;

        // Assess
        expect(records.map((p) => p.part)).to.deep.equal(["ingest", "retraining", "fleet", "worker", "pool"]);
        expect(records.flatMap((p) => p.queues.map((q) => q.label)).sort()).to.deep.equal(sources());
        expect(records.flatMap((p) => p.terminalQueues).sort()).to.deep.equal(declared("encache:messaging:TerminalQueue"));
        expect(records.flatMap((p) => p.ecsServices).sort()).to.deep.equal(declared("aws:ecs/service:Service"));
        for (const q of records.flatMap((p) => p.queues)) expect(q.consumers.length, `${q.label}'s consumers`).to.be.above(0);
      });

      it("draws every queue of the stack on the dashboard: each source queue, its DLQ, each terminal queue", () => {
        // Prepare: each queue's physical name, the last part of its ARN.
        const queues = of(stacks[stack]!, "aws:sqs/queue:Queue").map((q) => ({ name: q.name, physical: String(q.arn).split(":").pop()! }));

        // Act
        const drawn = dashboardQueueNames(stacks[stack]!);

        // Assess
        expect(queues.length).to.be.above(10);
        for (const q of queues) expect(drawn.has(q.physical), `${q.name} on the dashboard`).to.equal(true);
      });

      it("budgets every source queue's retention against its receives, and no queue the program lacks", () => {
        // Act
        const budgeted = queueBudgets(parseStackConfig(stackConfig(stack)))
          .map((b) => b.queue)
          .sort();

        // Assess
        expect(budgeted).to.deep.equal(sources());
      });

      it("has the chaos run drain every consumed queue, or drive the pool's adverts through its claimers", () => {
        // Prepare
        const records = inventories[stack]!;
        const drained = new Set(drainedQueues(records));
        const advertClasses = records.flatMap((p) => p.queues).flatMap((q) => (q.advertClass === undefined ? [] : [q.advertClass]));

        // Act: the queue each driven consumer's traffic goes to, for a run on each pool class.
        const claimed = new Set(advertClasses.map((cls) => trafficQueues(records, cls)["pool-claim"]));

        // Assess
        for (const q of records.flatMap((p) => p.queues)) {
          expect(drained.has(q.label) || claimed.has(q.label), `${q.label} covered by the chaos run`).to.equal(true);
          if (q.dlqConsumers.length > 0) expect(drained.has(q.dlq), `${q.dlq} drained by the chaos run`).to.equal(true);
        }
        expect(advertClasses.length).to.be.above(0);
      });
    });
  }
});
