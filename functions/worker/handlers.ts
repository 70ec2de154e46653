import type { Executable } from "./config";
import { runExecutable } from "./exec-handler";
import type { JobHandler } from "./job";

export type { JobContext, JobHandler } from "./job";

export type HandlerRegistry = ReadonlyMap<string, JobHandler>;

/**
 * The handlers registered in code. The built-in one runs an allow-listed executable: each
 * allow-list entry is a job type, so a message picks a type and never names a program.
 */
export function buildHandlers(executables: Record<string, Executable>, scratchDir: string): HandlerRegistry {
  const handlers = new Map<string, JobHandler>();
  for (const [type, executable] of Object.entries(executables)) {
    handlers.set(type, (ctx) => runExecutable(executable, ctx, scratchDir));
  }
  return handlers;
}
