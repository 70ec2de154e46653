import * as fs from "node:fs";
import * as path from "node:path";
import type { LocalPlatform } from "../platform";

export type LogLine = Record<string, unknown> & { step?: string };

/**
 * The structured log lines a function wrote (the Lambda host appends each function's output to
 * `<workDir>/logs/<logical name>.log`). Scenarios observe effects through the same log steps an
 * operator's dashboard would.
 */
export function readSteps(platform: LocalPlatform, functionLogicalName: string, step?: string): LogLine[] {
  const file = path.join(platform.options.workDir, "logs", `${functionLogicalName}.log`);
  if (!fs.existsSync(file)) return [];
  const out: LogLine[] = [];
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const parsed = JSON.parse(line) as LogLine;
      if (step === undefined || parsed.step === step) out.push(parsed);
    } catch {
      // a partial last line while the function is still writing
    }
  }
  return out;
}
