import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";

/** What a dropped connection looks like to the SDK: retryable (ECONNRESET), after the server applied the call. */
function lostResponseError(commandName: string): Error {
  return Object.assign(new Error(`socket hang up (injected: ${commandName} applied, response lost)`), { code: "ECONNRESET", $metadata: {} });
}

export interface LostResponses {
  /** Responses dropped so far. */
  readonly lost: number;
  /** Takes the fault out of the client. */
  remove(): void;
}

const MIDDLEWARE_NAME = "test:loseResponses";

/**
 * Injects a real lost response into `client`: the next `times` calls of `commandName` reach moto
 * and take effect there, then their response is replaced by a connection reset. The middleware
 * sits inside the SDK's retry loop (deserialize step), so the SDK retries exactly as it would
 * after a dropped connection, and the retry meets the state its first attempt left.
 */
export function loseResponses(client: DynamoDBClient, commandName: string, times = 1): LostResponses {
  let remaining = times;
  let lost = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === commandName && remaining > 0) {
        remaining -= 1;
        lost += 1;
        throw lostResponseError(commandName);
      }
      return result;
    },
    { step: "deserialize", name: MIDDLEWARE_NAME, override: true },
  );
  return {
    get lost() {
      return lost;
    },
    remove: () => {
      client.middlewareStack.remove(MIDDLEWARE_NAME);
    },
  };
}
