/**
 * Every delivery of a message to a Lambda, as the local event sources made it: which function,
 * when, with which receipt handle, and whether the invocation kept the record (it comes back) or
 * let it be deleted. The ledger reads these to decide whether a message in a DLQ got there only
 * because injected faults failed each of its receives.
 */
import type { SQSEvent } from "aws-lambda";
import { settleBatch } from "../hosts/event-source";
import type { InvokeResult, LambdaHost } from "../hosts/lambda-host";

export interface Receive {
  /** The function's logical name (as the fault proxy's callers are named). */
  fn: string;
  messageId: string;
  receiptHandle: string;
  body: string;
  startMs: number;
  endMs: number;
  /** The invocation let the record be deleted (processed, quarantined or deferred). */
  acknowledged: boolean;
  /** The other records of the same batch, by message id. */
  batchmates: string[];
}

/**
 * Every receive from now on, as it happens: wraps the host's `invoke`, which the event sources call
 * through the host object. Observing at the host keeps the runtime untouched: the event sources
 * still settle each batch themselves.
 */
export function recordReceives(host: LambdaHost, logicalNameOf: (functionName: string) => string): readonly Receive[] {
  const all: Receive[] = [];
  const invoke = host.invoke.bind(host);
  host.invoke = async (functionName: string, event: unknown): Promise<InvokeResult> => {
    const startMs = Date.now();
    const result = await invoke(functionName, event);
    const endMs = Date.now();
    const records = Array.isArray((event as SQSEvent | undefined)?.Records) ? (event as SQSEvent).Records : [];
    const ids = records.map((r) => r.messageId);
    // Every mapping of the program reports batch item failures (a policy rule checks it).
    const kept = new Set(settleBatch(result, ids, true).keep);
    for (const r of records)
      all.push({
        fn: logicalNameOf(functionName),
        messageId: r.messageId,
        receiptHandle: r.receiptHandle,
        body: r.body,
        startMs,
        endMs,
        acknowledged: !kept.has(r.messageId),
        batchmates: ids.filter((id) => id !== r.messageId),
      });
    return result;
  };
  return all;
}
