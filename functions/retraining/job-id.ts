import { createHash } from "node:crypto";

/** A fixed namespace for job ids (RFC 4122 v5), so the same message always names the same job. */
const NAMESPACE = Buffer.from("6f1c7a4e2b8d4c0e9a3f5d7b1e2c4a68", "hex");

/**
 * The job id for one SQS message: a UUID v5 of its message id. A redelivered message therefore
 * sends RunTask byte-for-byte the same request (same clientToken, same JOB_ID override), which is
 * what ECS's clientToken idempotency expects, and its state record names the same job.
 */
export function jobIdFor(messageId: string): string {
  const hash = createHash("sha1").update(NAMESPACE).update(messageId, "utf8").digest();
  hash[6] = ((hash[6] ?? 0) & 0x0f) | 0x50;
  hash[8] = ((hash[8] ?? 0) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
