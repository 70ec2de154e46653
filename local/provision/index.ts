/**
 * Pulumi mocks that deploy into moto. Each `newResource` creates the resource in moto with the
 * AWS SDK and answers with moto's real ids, ARNs and URLs, so outputs flow into dependents as
 * they would on AWS (a Lambda's environment gets moto's queue URL, an SSM parameter gets the
 * moto instance id). Types moto cannot act on (Lambda, event source mappings, schedules, log
 * groups, ECR, application autoscaling, load balancers) are answered like the offline plan's mocks and left uncreated;
 * `outcomes()` says which is which.
 *
 * This module only dispatches: each AWS service's provisioner module maps Pulumi type tokens to
 * the function that answers them (./recorded.ts: what is only recorded); ./context.ts holds what they share.
 */
import type * as pulumi from "@pulumi/pulumi";
import { autoscalingProvisioners } from "./autoscaling";
import { cloudwatchProvisioners } from "./cloudwatch";
import { createContext, ProvisionError, type Args, type MotoMocksOptions, type ProvisionOutcome, type Provisioners, type Result } from "./context";
import { dynamodbProvisioners } from "./dynamodb";
import { ec2Provisioners } from "./ec2";
import { ecsProvisioners } from "./ecs";
import { eventsProvisioners } from "./events";
import { iamProvisioners } from "./iam";
import type { Inputs } from "./inputs";
import { recordedProvisioners, recordOnly } from "./recorded";
import { snsProvisioners } from "./sns";
import { sqsProvisioners } from "./sqs";
import { ssmCalls, ssmProvisioners } from "./ssm";

export { physicalName } from "../../plan/mocks";
export { ProvisionError, type MotoMocksOptions, type ProvisionOutcome, type Result } from "./context";
export { containersForMoto } from "./ecs";
export { launchTemplateData } from "./ec2";
export { codePathFor } from "./recorded";

export interface MotoMocks extends pulumi.runtime.Mocks {
  newResource(args: pulumi.runtime.MockResourceArgs): Promise<Result>;
  call(args: pulumi.runtime.MockCallArgs): Promise<Record<string, unknown>>;
  /** Every custom resource answered so far, in completion order. */
  outcomes(): ProvisionOutcome[];
  /** Every failed resource or call, in order. Pulumi wraps what newResource throws in its own errors. */
  failures(): ProvisionError[];
}

/** Every provisioner by Pulumi type token. A type no module claims is recorded only. */
export const PROVISIONERS: Provisioners = merge([
  sqsProvisioners,
  snsProvisioners,
  cloudwatchProvisioners,
  dynamodbProvisioners,
  ssmProvisioners,
  ec2Provisioners,
  autoscalingProvisioners,
  ecsProvisioners,
  iamProvisioners,
  eventsProvisioners,
  recordedProvisioners,
]);

/** Components are answered empty, except the remote ones the mocks answer themselves. */
const ANSWERED_COMPONENTS = new Set(["awsx:ec2:Vpc", "awsx:ecr:Image"]);

export function createMotoMocks(opts: MotoMocksOptions): MotoMocks {
  const ctx = createContext(opts);
  const outcomes: ProvisionOutcome[] = [];
  const failures: ProvisionError[] = [];
  /** Records a failure and returns it, to throw: Pulumi wraps what newResource throws in its own errors. */
  const failed = (type: string, name: string, err: unknown): ProvisionError => {
    const failure = new ProvisionError(type, name, err);
    failures.push(failure);
    return failure;
  };
  return {
    async newResource(args: Args): Promise<Result> {
      if (!args.custom && !ANSWERED_COMPONENTS.has(args.type)) return { id: undefined, state: {} };
      const outcome: ProvisionOutcome = { type: args.type, name: args.name, created: false, notes: [] };
      try {
        const result = await (PROVISIONERS[args.type] ?? recordOnly)(ctx, args, outcome);
        if (args.custom) outcomes.push(outcome);
        return result;
      } catch (err) {
        throw failed(args.type, args.name, err);
      }
    },

    async call(args: pulumi.runtime.MockCallArgs): Promise<Record<string, unknown>> {
      const answer = ssmCalls[args.token];
      if (!answer) return ctx.planMocks.call(args) as Record<string, unknown>;
      try {
        return await answer(ctx, args);
      } catch (err) {
        throw failed(args.token, String((args.inputs as Inputs).name), err);
      }
    },

    outcomes: () => [...outcomes],
    failures: () => [...failures],
  };
}

/** One map from the per-service maps; a type claimed twice is a mistake, caught at load. */
function merge(maps: Provisioners[]): Provisioners {
  const types = maps.flatMap((map) => Object.keys(map));
  const twice = types.find((type, i) => types.indexOf(type) !== i);
  if (twice !== undefined) throw new Error(`two provisioners claim ${twice}`);
  return Object.assign({}, ...maps);
}
