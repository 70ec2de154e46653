/**
 * The stack's operator policy (infra/parts/operator.ts) as both stacks plan it: exactly the
 * actions `ops` declares for the stack's GPU mode (ops/iam.ts), on this stack's queues, cluster and
 * GPU only. The grants' actions are held to the code's calls by test/ops/iam.test.ts; this holds the
 * bound policy to the grants and to the stack's resources, as the part tests do for each role.
 */
import { expect } from "chai";
import { grantedActions } from "../../../functions/shared/grants";
import { parseStackConfig } from "../../../infra/config";
import { operatorGrants } from "../../../ops/iam";
import { ENVIRONMENT_TAG } from "../../../policy/contract";
import { named, ofType } from "../helpers/plan-queries";
import { STACKS, useStackPlans } from "../helpers/run-plan";
import { stackConfig } from "../helpers/stack-config";

interface Statement {
  Sid: string;
  Action: string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

const list = (r: string | string[]) => [r].flat();
/** `arn:aws:sqs:…:ingest-dlq-7bfc034` → `ingest-dlq`: the queue's logical name, without the engine's suffix. */
const queueOf = (arn: string) => (arn.split(":").at(-1) ?? "").replace(/-[0-9a-f]{7}$/, "");

describe("the operator policy: what ops calls, on this stack's resources", function () {
  this.timeout(120_000);
  const stacks = useStackPlans();

  for (const stack of STACKS) {
    describe(`stack ${stack}`, () => {
      const mode = () => (parseStackConfig(stackConfig(stack)).gpu.capacity.mode === "fleet" ? "fleet" : "instance");
      const statements = () => (named(stacks[stack]!, "aws:iam/policy:Policy", "operator-policy").inputs.policy as { Statement: Statement[] }).Statement;
      const sid = (id: string) => {
        const s = statements().find((x) => x.Sid === id);
        if (!s) throw new Error(`no statement ${id}`);
        return s;
      };

      it("is named for the stack and allows exactly the grants of its GPU mode", () => {
        // Prepare
        const policy = named(stacks[stack]!, "aws:iam/policy:Policy", "operator-policy");
        // Act
        const actions = [...new Set(statements().flatMap((s) => s.Action))].sort();
        // Assess
        expect(policy.inputs.name).to.equal(`encache-operator-${stack}`);
        expect(actions).to.deep.equal(grantedActions(operatorGrants(mode())));
      });

      it("reads every queue of the stack, and moves messages only from DLQs back to their sources", () => {
        // Prepare
        const queues = ofType(stacks[stack]!, "aws:sqs/queue:Queue")
          .map((q) => q.name)
          .sort();
        const dlqs = queues.filter((q) => ofType(stacks[stack]!, "encache:messaging:ManagedQueue").some((m) => q === `${m.name}-dlq`));
        const sources = dlqs.map((d) => d.replace(/-dlq$/, ""));
        // Act
        const read = list(sid("ReadQueueDepths").Resource).map(queueOf).sort();
        const move = list(sid("RedriveDeadLetters").Resource).map(queueOf).sort();
        const back = list(sid("RedriveReturnsToSource").Resource).map(queueOf).sort();
        const release = list(sid("ReleaseFromQuarantine").Resource).map(queueOf).sort();
        // Assess
        expect(read).to.deep.equal(queues);
        expect(move).to.deep.equal([...dlqs].sort());
        expect(back).to.deep.equal([...sources].sort());
        expect(list(sid("RedriveReadsDeadLetters").Resource).map(queueOf).sort()).to.deep.equal([...dlqs].sort());
        expect(release).to.deep.equal(["ingest", "ingest-dlq"]);
        for (const s of statements().filter((x) => x.Action.some((a) => a.startsWith("sqs:")))) {
          for (const arn of list(s.Resource)) expect(arn, s.Sid).to.match(/^arn:aws:sqs:us-east-1:123456789012:/);
        }
      });

      it("changes only this stack's GPU, and writes no tag but the hold tag", () => {
        // Prepare
        const holdTag = parseStackConfig(stackConfig(stack)).gpu.holdTag;
        // Act
        const [stop, hold] = mode() === "fleet" ? [sid("SizeStackGpuGroup"), sid("HoldStackGpuGroup")] : [sid("StopStackGpu"), sid("HoldStackGpu")];
        // Assess
        for (const s of [stop, hold]) expect(s.Condition?.StringEquals?.[`aws:ResourceTag/${ENVIRONMENT_TAG}`], s.Sid).to.equal(stack);
        expect(hold.Condition?.["ForAllValues:StringEquals"]).to.deep.equal({ "aws:TagKeys": [holdTag] });
        if (mode() === "fleet") expect(stop.Resource).to.match(new RegExp(`autoScalingGroupName/encache-gpu-fleet-${stack}$`));
        else expect(stop.Condition?.StringEquals?.["aws:ResourceTag/Name"]).to.equal(`encache-gpu-worker-${stack}`);
      });

      it("reads the worker's tasks on the platform cluster only", () => {
        // Act
        const list_ = sid("ListWorkerTasks");
        const tasks = sid("ReadWorkerTasks");
        // Assess
        expect(list_.Condition?.ArnEquals?.["ecs:cluster"]).to.match(/^arn:aws:ecs:us-east-1:123456789012:cluster\/platform-cluster-/);
        expect(tasks.Resource).to.match(/^arn:aws:ecs:us-east-1:123456789012:task\/platform-cluster-[0-9a-f]+\/\*$/);
      });
    });
  }
});
