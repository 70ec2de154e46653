/**
 * The user's model server on this instance, as the gateway sees it: a FIFO limit on how many windows
 * it is sent at once (a GPU serves a few well and many badly), and each call bounded in time.
 */

export type FetchFn = (url: string, init: RequestInit) => Promise<Response>;

/**
 * At most `limit` holders at once; the others wait in arrival order. Windows arrive from SQS roughly
 * oldest first, and a window that waited longest is the one nearest its consumer's timeout.
 */
export class Limiter {
  private running = 0;
  private readonly queue: Array<(granted: boolean) => void> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`Limiter: limit must be a whole number ≥ 1, got ${limit}`);
  }

  /** Holders now, and waiters. */
  get active(): number {
    return this.running;
  }
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Resolves with the slot's release once it is this caller's turn (call it exactly once), or with
   * `undefined` if {@link turnAway} sent the caller away before its turn came.
   */
  acquire(): Promise<(() => void) | undefined> {
    return new Promise((resolve) => {
      const turn = (granted: boolean) => {
        if (!granted) return resolve(undefined);
        this.running++;
        let released = false;
        resolve(() => {
          if (released) return;
          released = true;
          this.running--;
          this.queue.shift()?.(true);
        });
      };
      if (this.running < this.limit) turn(true);
      else this.queue.push(turn);
    });
  }

  /**
   * Sends every waiter away at once, all in the same tick: a drain hands its backlog back together,
   * not one window per finished slot (which would take as long as running them). Returns how many.
   */
  turnAway(): number {
    const waiters = this.queue.splice(0);
    for (const w of waiters) w(false);
    return waiters.length;
  }
}

export type ModelAnswer =
  /** The model answered (any status); `body` is its text. */
  | { kind: "answered"; status: number; body: string; contentType: string | undefined }
  /** No answer: the call timed out, was refused, or the connection broke. */
  | { kind: "failed"; reason: "timeout" | "unreachable"; error: string };

export interface ModelClientOptions {
  baseUrl: string;
  path: string;
  healthPath: string;
  timeoutMs: number;
  /** How long the status check waits for the model's health path. */
  healthTimeoutMs: number;
  fetch: FetchFn;
}

/**
 * A timeout signal on the global timers (not `AbortSignal.timeout`, whose timer is internal): the
 * gateway's timeouts then follow the same clock as the rest of it, fake in the tests.
 */
function timeoutSignal(ms: number): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError")), ms);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

export class ModelClient {
  constructor(private readonly o: ModelClientOptions) {}

  /** POSTs one window (the same body, the same Idempotency-Key) and reads the whole answer within the timeout. */
  async post(body: string, idempotencyKey: string, contentType = "application/json"): Promise<ModelAnswer> {
    const { signal, clear } = timeoutSignal(this.o.timeoutMs);
    try {
      const res = await this.o.fetch(`${this.o.baseUrl}${this.o.path}`, {
        method: "POST",
        headers: { "content-type": contentType, "idempotency-key": idempotencyKey },
        body,
        signal,
      });
      const text = await res.text();
      return { kind: "answered", status: res.status, body: text, contentType: res.headers.get("content-type") ?? undefined };
    } catch (error) {
      if (signal.aborted) return { kind: "failed", reason: "timeout", error: `no answer within ${this.o.timeoutMs} ms` };
      return { kind: "failed", reason: "unreachable", error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    } finally {
      clear();
    }
  }

  /** Whether the model's own health path answers 200 within the short health timeout. */
  async healthy(): Promise<boolean> {
    const { signal, clear } = timeoutSignal(this.o.healthTimeoutMs);
    try {
      const res = await this.o.fetch(`${this.o.baseUrl}${this.o.healthPath}`, { method: "GET", signal });
      await res.arrayBuffer(); // releases the keep-alive socket
      return res.status === 200;
    } catch {
      return false;
    } finally {
      clear();
    }
  }
}
