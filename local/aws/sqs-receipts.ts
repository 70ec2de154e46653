/**
 * SQS's receipt-handle rule, which moto does not keep. Each receive of a message gives it a new
 * receipt handle; AWS acts on a message only through the handle of its latest receive:
 *
 * - DeleteMessage with an older handle "will still succeed, but the message might not be deleted"
 *   (the DeleteMessage API reference). Modelled as its worst case: answered with success, and the
 *   message is not deleted.
 * - ChangeMessageVisibility with an older handle is refused. The API reference lists
 *   ReceiptHandleIsInvalid among its errors without saying which case gives which; users report
 *   "Value … for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not
 *   available for visibility timeout change." once a message was received again
 *   (mapbox/ecs-watchbot#135). Modelled as ReceiptHandleIsInvalid (400, sender fault) with that text.
 * - The batch forms apply the same rule per entry: a stale DeleteMessageBatch entry is listed as
 *   successful and not deleted; a stale ChangeMessageVisibilityBatch entry fails with
 *   ReceiptHandleIsInvalid.
 *
 * moto instead keeps every handle a message ever had and acts on any of them (moto/sqs/models.py,
 * `had_receipt_handle`), so a task whose message was handed to another would still delete it,
 * and a duplicate run would go unseen locally. The SQS proxies (sqs-clock.ts) learn each message's
 * latest handle from the ReceiveMessage answers they pass on and enforce the rule on the calls
 * above; a handle they never saw handed out (a receive that did not pass through them) is passed
 * through, as before. Only the JSON protocol (SDK v3's) is read.
 */

import { isObject, type Json, type Reply } from "./intercepting-proxy";

export const DELETE_MESSAGE = "AmazonSQS.DeleteMessage";
export const DELETE_MESSAGE_BATCH = "AmazonSQS.DeleteMessageBatch";
export const CHANGE_VISIBILITY = "AmazonSQS.ChangeMessageVisibility";
export const CHANGE_VISIBILITY_BATCH = "AmazonSQS.ChangeMessageVisibilityBatch";
export const RECEIVE_MESSAGE = "AmazonSQS.ReceiveMessage";

/** The operations that act on a message through a receipt handle. */
export const HANDLE_OPERATIONS: ReadonlySet<string> = new Set([DELETE_MESSAGE, DELETE_MESSAGE_BATCH, CHANGE_VISIBILITY, CHANGE_VISIBILITY_BATCH]);

export const STALE_HANDLE_CODE = "ReceiptHandleIsInvalid";
export const staleHandleMessage = (handle: string) =>
  `Value ${handle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`;

/**
 * Which handle is each message's latest, learnt from receives. Shared by every proxy that hands
 * out the same queues' messages, so a receive through one makes the handle used through another stale.
 */
export class ReceiptHandles {
  /** Handle → message id, for every handle seen handed out. */
  private readonly messageOf = new Map<string, string>();
  /** Message id → its latest handle. */
  private readonly latest = new Map<string, string>();
  readonly counts = { deletesIgnored: 0, visibilityChangesRefused: 0 };

  /** Records a receive's messages; returns the handles this receive superseded. */
  received(messages: ReadonlyArray<{ MessageId?: unknown; ReceiptHandle?: unknown }>): string[] {
    const superseded: string[] = [];
    for (const m of messages) {
      if (typeof m.MessageId !== "string" || typeof m.ReceiptHandle !== "string") continue;
      const before = this.latest.get(m.MessageId);
      if (before !== undefined && before !== m.ReceiptHandle) superseded.push(before);
      this.latest.set(m.MessageId, m.ReceiptHandle);
      this.messageOf.set(m.ReceiptHandle, m.MessageId);
    }
    return superseded;
  }

  /** A handle seen handed out whose message has been received again since. Unknown handles are not stale. */
  isStale(handle: string): boolean {
    const id = this.messageOf.get(handle);
    return id !== undefined && this.latest.get(id) !== handle;
  }

  /** The message was deleted with `handle` (its latest): its handles need not be remembered any more. */
  deleted(handle: string): void {
    const id = this.messageOf.get(handle);
    if (id === undefined || this.latest.get(id) !== handle) return;
    this.latest.delete(id);
    for (const [h, m] of this.messageOf) if (m === id) this.messageOf.delete(h);
  }

  /** How many messages' handles are remembered (for tests: deletes forget). */
  size(): number {
    return this.latest.size;
  }
}

export interface StaleEntry {
  /** The batch entry's Id; absent for the single-message calls. */
  Id?: string;
  ReceiptHandle: string;
}

/**
 * Pure: splits a handle operation's request into what may go on to moto (`forward`, undefined
 * when nothing may) and the stale entries to answer for here.
 */
export function splitStale(target: string, body: Json, isStale: (handle: string) => boolean): { forward: Json | undefined; stale: StaleEntry[] } {
  const batch = target === DELETE_MESSAGE_BATCH || target === CHANGE_VISIBILITY_BATCH;
  if (!HANDLE_OPERATIONS.has(target) || (batch && !Array.isArray(body.Entries))) return { forward: body, stale: [] };
  const stale: StaleEntry[] = [];
  const fresh: unknown[] = [];
  // A single-message call is a batch of one, without an Id.
  for (const entry of batch ? (body.Entries as unknown[]) : [body]) {
    if (isObject(entry) && typeof entry.ReceiptHandle === "string" && isStale(entry.ReceiptHandle))
      stale.push({ ...(batch ? { Id: typeof entry.Id === "string" ? entry.Id : "" } : {}), ReceiptHandle: entry.ReceiptHandle });
    else fresh.push(entry);
  }
  if (stale.length === 0) return { forward: body, stale };
  return { forward: batch && fresh.length > 0 ? { ...body, Entries: fresh } : undefined, stale };
}

/** An answer made here, in SQS's JSON protocol. */
export type LocalAnswer = Reply & { headers: Record<string, string>; body: string };

/**
 * Pure: the answer for a call with stale entries. `upstream` is moto's answer to the fresh rest of a
 * batch (status and parsed body), absent when nothing was forwarded. A batch moto refused as a
 * whole (not 200) is answered as moto did: the caller retries the whole batch.
 */
export function answerWithStale(target: string, stale: readonly StaleEntry[], upstream?: { status: number; body: Json }): LocalAnswer | undefined {
  const json = (status: number, body: Json, extra: Record<string, string> = {}): LocalAnswer => ({
    status,
    headers: { "content-type": "application/x-amz-json-1.0", ...extra },
    body: JSON.stringify(body),
  });
  if (upstream !== undefined && upstream.status !== 200) return undefined;
  const listed = (key: "Successful" | "Failed"): unknown[] => (Array.isArray(upstream?.body[key]) ? (upstream.body[key] as unknown[]) : []);
  switch (target) {
    case DELETE_MESSAGE:
      return json(200, {});
    case CHANGE_VISIBILITY: {
      const handle = stale[0]?.ReceiptHandle ?? "";
      return json(
        400,
        { __type: `com.amazonaws.sqs#${STALE_HANDLE_CODE}`, message: staleHandleMessage(handle) },
        { "x-amzn-query-error": `${STALE_HANDLE_CODE};Sender` },
      );
    }
    case DELETE_MESSAGE_BATCH:
      return json(200, { ...(upstream?.body ?? {}), Successful: [...listed("Successful"), ...stale.map((s) => ({ Id: s.Id }))], Failed: listed("Failed") });
    case CHANGE_VISIBILITY_BATCH:
      return json(200, {
        ...(upstream?.body ?? {}),
        Successful: listed("Successful"),
        Failed: [
          ...listed("Failed"),
          ...stale.map((s) => ({ Id: s.Id, SenderFault: true, Code: STALE_HANDLE_CODE, Message: staleHandleMessage(s.ReceiptHandle) })),
        ],
      });
    default:
      return undefined;
  }
}

/** Pure: the handles a successful delete call deleted (the batch's entries not listed as failed). */
export function deletedHandles(target: string, request: Json, response: Json): string[] {
  if (target === DELETE_MESSAGE) return typeof request.ReceiptHandle === "string" ? [request.ReceiptHandle] : [];
  if (target !== DELETE_MESSAGE_BATCH || !Array.isArray(request.Entries)) return [];
  const failed = new Set((Array.isArray(response.Failed) ? response.Failed : []).map((f) => (isObject(f) ? f.Id : undefined)));
  return request.Entries.filter(
    (e): e is { Id: unknown; ReceiptHandle: string } => isObject(e) && typeof e.ReceiptHandle === "string" && !failed.has(e.Id),
  ).map((e) => e.ReceiptHandle);
}
