import * as fs from "node:fs";
import * as path from "node:path";
import type { LocalPlatform } from "../platform";

export type LogLine = Record<string, unknown> & { step?: string };

/** The JSON lines of one log file (a function's, or a worker task's); other lines are skipped. */
export function readLogLines(file: string): LogLine[] {
  if (!fs.existsSync(file)) return [];
  const out: LogLine[] = [];
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a partial last line while the writer is still writing
    }
  }
  return out;
}

/**
 * The structured log lines a function wrote (the Lambda host appends each function's output to
 * `<workDir>/logs/<logical name>.log`). Scenarios observe effects through the same log steps an
 * operator's dashboard would.
 */
export function readSteps(platform: LocalPlatform, functionLogicalName: string, step?: string): LogLine[] {
  const lines = readLogLines(path.join(platform.options.workDir, "logs", `${functionLogicalName}.log`));
  return step === undefined ? lines : lines.filter((l) => l.step === step);
}
