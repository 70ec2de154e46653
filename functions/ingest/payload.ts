import { z } from "zod";

/** Extra keys are kept: the GPU service owns the rest of the payload's shape. */
export const WindowPayloadSchema = z.looseObject({
  sessionId: z.string().min(1),
  userId: z.string().min(1),
  windowIndex: z.number().int().min(0),
  frameCount: z.number().int().min(0),
});

export type WindowPayload = z.output<typeof WindowPayloadSchema>;

/**
 * The window's natural key, sent as the POST's `Idempotency-Key`. Delivery is at least once (a
 * POST can succeed and its answer be lost; a batch can be retried whole), so the GPU service
 * processes each key once. Not the SQS message id: a DLQ redrive gives the message a new one.
 */
export function windowKey(payload: Pick<WindowPayload, "sessionId" | "windowIndex">): string {
  return `${payload.sessionId}/${payload.windowIndex}`;
}

export type PayloadParseResult = { ok: true; payload: WindowPayload } | { ok: false; reason: string };

export function parseWindowPayload(body: string): PayloadParseResult {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, reason: `body is not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const result = WindowPayloadSchema.safeParse(json);
  if (result.success) return { ok: true, payload: result.data };
  const reason = result.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "body"}: ${issue.message}`).join("; ");
  return { ok: false, reason: `schema: ${reason}` };
}
