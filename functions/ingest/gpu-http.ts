import { type WindowPayload, windowKey } from "./payload";

export type FetchFn = (url: string, init: RequestInit) => Promise<Response>;

export class GpuRequestError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "GpuRequestError";
  }
}

/** Resolves on a 2xx reply; rejects on non-2xx, network errors and on timeout (TimeoutError). */
export async function postWindowToGpu(fetchFn: FetchFn, url: string, payload: WindowPayload, timeoutMs: number): Promise<void> {
  const response = await fetchFn(url, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": windowKey(payload) },
    body: JSON.stringify(payload),
    signal: AbortSignal.timeout(timeoutMs),
  });
  // Reading the body releases the keep-alive socket; the text also explains a failure.
  const text = await response.text();
  if (!response.ok) {
    throw new GpuRequestError(`GPU service replied ${response.status}: ${text.slice(0, 200)}`, response.status);
  }
}
