/**
 * Auto Scaling's `CompleteLifecycleAction`, which moto 5.2 does not implement. The local GPU gateways
 * reach Auto Scaling here (AWS_ENDPOINT_URL_AUTO_SCALING): that call is answered by `complete` (the
 * fleet stand-in knows which instances are leaving), as Auto Scaling does (an empty result, or
 * `ValidationError` "No active Lifecycle Action found with instance ID …"); every other call goes on
 * to moto untouched. moto checks no signatures; never put this in front of AWS.
 */
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

const XMLNS = "http://autoscaling.amazonaws.com/doc/2011-01-01/";

export class LifecycleActionProxy extends InterceptingProxy {
  private readonly target: URL;

  /** `complete` answers whether the instance had a lifecycle action in progress (and ends it). */
  constructor(
    target: string,
    private readonly complete: (c: LifecycleCompletion) => boolean,
  ) {
    super("LifecycleActionProxy");
    this.target = new URL(target);
  }

  start(): Promise<string> {
    return this.listen((req, res) => {
      readBody(req).then(
        (body) => {
          const c = completionOf(body.toString("utf8"));
          if (!c)
            return void this.exchange(this.target, req, body).then(
              (up) => sendReply(res, up.status, up.headers, up.body, up.statusMessage),
              (err: Error) => this.fail(res, this.target, err),
            );
          const id = c.instanceId.replace(/[^\w-]/g, "");
          const ok = this.complete(c);
          const xml = ok
            ? `<CompleteLifecycleActionResponse xmlns="${XMLNS}"><CompleteLifecycleActionResult/><ResponseMetadata><RequestId>local</RequestId></ResponseMetadata></CompleteLifecycleActionResponse>`
            : `<ErrorResponse xmlns="${XMLNS}"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>No active Lifecycle Action found with instance ID ${id}</Message></Error><RequestId>local</RequestId></ErrorResponse>`;
          sendReply(res, ok ? 200 : 400, { "content-type": "text/xml" }, xml);
        },
        () => res.destroy(),
      );
    });
  }
}
