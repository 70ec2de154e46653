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
  type Distribution,
  distributionUpdate,
  type GroupDistributions,
  queryParams,
  type TerminatingInstance,
  withoutMixedInstancesPolicy,
} from "./group-stand-in";
import { InterceptingProxy, readBody, sendReply } from "./intercepting-proxy";

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
const XML = { "content-type": "text/xml" };
const validationError = (message: string) =>
  `<ErrorResponse xmlns="${XMLNS}"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>${message.replace(/&/g, "&amp;").replace(/</g, "&lt;")}</Message></Error><RequestId>local</RequestId></ErrorResponse>`;

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
    return this.listen((req, res) => {
      readBody(req).then(
        (body) => this.handle(req, res, body),
        () => res.destroy(),
      );
    });
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void {
    const text = body.toString("utf8");
    const params = queryParams(text);
    const action = params.get("Action");
    const c = completionOf(text);
    if (c) return this.completeAction(res, c);
    if (this.groups && action === "UpdateAutoScalingGroup") return void this.update(req, res, params, this.groups);
    if (this.groups && action === "DescribeAutoScalingGroups") return void this.describe(req, res, body, this.groups);
    this.exchange(this.target, req, body).then(
      (up) => sendReply(res, up.status, up.headers, up.body, up.statusMessage),
      (err: Error) => this.fail(res, this.target, err),
    );
  }

  private completeAction(res: http.ServerResponse, c: LifecycleCompletion): void {
    const id = c.instanceId.replace(/[^\w-]/g, "");
    const ok = this.complete(c);
    const xml = ok
      ? `<CompleteLifecycleActionResponse xmlns="${XMLNS}"><CompleteLifecycleActionResult/><ResponseMetadata><RequestId>local</RequestId></ResponseMetadata></CompleteLifecycleActionResponse>`
      : validationError(`No active Lifecycle Action found with instance ID ${id}`);
    sendReply(res, ok ? 200 : 400, XML, xml);
  }

  /** The distribution here, the rest (if any) in moto; the distribution changes only once moto took the rest. */
  private async update(req: http.IncomingMessage, res: http.ServerResponse, params: URLSearchParams, groups: GroupStandIn): Promise<void> {
    const group = params.get("AutoScalingGroupName") ?? "";
    const change = distributionUpdate(groups.distributions.of(group), params);
    if (change && "error" in change) return sendReply(res, 400, XML, validationError(change.error));
    let next: Distribution | undefined;
    if (change) next = change.next;
    if (!change || changesMore(params)) {
      const forwarded = Buffer.from(withoutMixedInstancesPolicy(params).toString(), "utf8");
      try {
        const up = await this.exchange(this.target, req, forwarded, { headers: { ...req.headers, "content-length": String(forwarded.length) } });
        if (up.status >= 300 || !next) return sendReply(res, up.status, up.headers, up.body, up.statusMessage);
      } catch (err) {
        return this.fail(res, this.target, err as Error);
      }
    }
    if (next) groups.distributions.set(group, next);
    sendReply(
      res,
      200,
      XML,
      `<UpdateAutoScalingGroupResponse xmlns="${XMLNS}"><ResponseMetadata><RequestId>local</RequestId></ResponseMetadata></UpdateAutoScalingGroupResponse>`,
    );
  }

  private async describe(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, groups: GroupStandIn): Promise<void> {
    try {
      const up = await this.exchange(this.target, req, body);
      if (up.status !== 200) return sendReply(res, up.status, up.headers, up.body, up.statusMessage);
      const xml = amendDescription(up.body.toString("utf8"), (name) => {
        const distribution = groups.distributions.of(name);
        return { ...(distribution ? { distribution } : {}), terminating: groups.terminating(name) };
      });
      sendReply(res, 200, up.headers, xml, up.statusMessage);
    } catch (err) {
      this.fail(res, this.target, err as Error);
    }
  }
}
