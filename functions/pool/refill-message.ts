import { z } from "zod";

/** What the refill schedule sends: `{"resource_class": "<class>", "scheduled_time": "<aws.scheduler.scheduled-time>"}`. */
export const RefillMessageSchema = z.object({
  resource_class: z.string().min(1),
  scheduled_time: z.string().min(1),
});

export type RefillMessage = z.output<typeof RefillMessageSchema>;

export function parseRefillMessage(body: string): { ok: true; message: RefillMessage } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { ok: false, reason: "body is not JSON" };
  }
  const r = RefillMessageSchema.safeParse(json);
  if (r.success) return { ok: true, message: r.data };
  return { ok: false, reason: `schema: ${r.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ")}` };
}
