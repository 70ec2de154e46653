/**
 * Auto Scaling in front of moto, for what moto 5.2 lacks. The local GPU gateways and the Lambdas
 * reach Auto Scaling here (AWS_ENDPOINT_URL_AUTO_SCALING):
 * - `CompleteLifecycleAction`, which moto does not implement, is answered by `complete` (the fleet
 *   stand-in knows which instances are leaving), as Auto Scaling does (an empty result, or
 *   `ValidationError` "No active Lifecycle Action found with instance ID …");
 * - with the fleet's group stand-in (./group-stand-in.ts): an `UpdateAutoScalingGroup`'s
 *   `MixedInstancesPolicy` changes the distribution the stand-in keeps (the rest of the call goes on to
 *   moto), and `DescribeAutoScalingGroups` shows that distribution and the instances leaving through
 *   the terminate hook (`Terminating:Wait`);
 * every other call goes on to moto untouched. moto checks no signatures; never put this in front of AWS.
 */
import type * as http from "node:http";
import {
  amendDescription,
  changesMore,
  distributionUpdate,
  type GroupDistributions,
  type TerminatingInstance,
  withoutMixedInstancesPolicy,
} from "./group-stand-in";
import { InterceptingProxy, type Reply, xmlText } from "./intercepting-proxy";

export interface LifecycleCompletion {
  instanceId: string;
  groupName: string;
  hookName: string;
}

/** Pure: a query-protocol CompleteLifecycleAction request's parameters, else undefined. */
export function completionOf(body: string): LifecycleCompletion | undefined {
  const p = new URLSearchParams(body);
  if (p.get("Action") !== "CompleteLifecycleAction") return undefined;
  return {
    instanceId: p.get("InstanceId") ?? "",
    groupName: p.get("AutoScalingGroupName") ?? "",
    hookName: p.get("LifecycleHookName") ?? "",
  };
}

/** The groups' stand-in: their distributions, and the instances each one's terminate hook holds. */
export interface GroupStandIn {
  distributions: GroupDistributions;
  terminating: (groupName: string) => readonly TerminatingInstance[];
}

const XMLNS = "http://autoscaling.amazonaws.com/doc/2011-01-01/";
const xmlReply = (status: number, body: string): Reply => ({ status, headers: { "content-type": "text/xml" }, body });
const validationError = (message: string) =>
  xmlReply(
    400,
    `<ErrorResponse xmlns="${XMLNS}"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>${xmlText(message)}</Message></Error><RequestId>local</RequestId></ErrorResponse>`,
  );
const emptyResult = (action: string, result = "") =>
  xmlReply(200, `<${action}Response xmlns="${XMLNS}">${result}<ResponseMetadata><RequestId>local</RequestId></ResponseMetadata></${action}Response>`);

export class AutoScalingProxy extends InterceptingProxy {
  private readonly target: URL;

  /** `complete` answers whether the instance had a lifecycle action in progress (and ends it). */
  constructor(
    target: string,
    private readonly complete: (c: LifecycleCompletion) => boolean,
    private readonly groups?: GroupStandIn,
  ) {
    super("AutoScalingProxy");
    this.target = new URL(target);
  }

  start(): Promise<string> {
    return this.listen((req, res) => this.answerBuffered(this.target, req, res, (body) => this.answer(req, body)));
  }

  private answer(req: http.IncomingMessage, body: Buffer): Promise<Reply> | Reply {
    const params = new URLSearchParams(body.toString("utf8"));
    const action = params.get("Action");
    const c = completionOf(body.toString("utf8"));
    if (c) {
      if (this.complete(c)) return emptyResult("CompleteLifecycleAction", "<CompleteLifecycleActionResult/>");
      return validationError(`No active Lifecycle Action found with instance ID ${c.instanceId.replace(/[^\w-]/g, "")}`);
    }
    if (this.groups && action === "UpdateAutoScalingGroup") return this.update(req, params, this.groups);
    if (this.groups && action === "DescribeAutoScalingGroups") return this.describe(req, body, this.groups);
    return this.exchange(this.target, req, body);
  }

  /** The distribution here, the rest (if any) in moto; the distribution changes only once moto took the rest. */
  private async update(req: http.IncomingMessage, params: URLSearchParams, groups: GroupStandIn): Promise<Reply> {
    const group = params.get("AutoScalingGroupName") ?? "";
    const change = distributionUpdate(groups.distributions.of(group), params);
    if (change && "error" in change) return validationError(change.error);
    if (!change || changesMore(params)) {
      const up = await this.exchange(this.target, req, Buffer.from(withoutMixedInstancesPolicy(params).toString(), "utf8"));
      if (up.status >= 300 || !change) return up;
    }
    groups.distributions.set(group, change.next);
    return emptyResult("UpdateAutoScalingGroup");
  }

  private async describe(req: http.IncomingMessage, body: Buffer, groups: GroupStandIn): Promise<Reply> {
    const up = await this.exchange(this.target, req, body);
    if (up.status !== 200) return up;
    const xml = amendDescription(up.body.toString("utf8"), (name) => {
      const distribution = groups.distributions.of(name);
      return { ...(distribution ? { distribution } : {}), terminating: groups.terminating(name) };
    });
    return { ...up, body: xml };
  }
}
