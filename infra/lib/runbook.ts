/**
 * Where an alarm's runbook is: one section of docs/operations.md per alarm, whose heading is the
 * alarm's logical name (so GitHub's anchor for it is that name). The alarm's description ends with
 * this, so whoever the alert topic wakes reads where to start; test/infra/mocks/runbook.test.ts
 * holds every alarm of both stacks to a section, and every section to an alarm.
 */
export const RUNBOOK_FILE = "docs/operations.md";

/** `Runbook: docs/operations.md#<alarm>`. Logical names are lowercase with dashes, their own anchors. */
export function runbookPointer(alarmName: string): string {
  if (!/^[a-z0-9-]+$/.test(alarmName)) throw new Error(`runbook: alarm name ${alarmName} is not its own anchor (lowercase letters, digits, dashes)`);
  return `Runbook: ${RUNBOOK_FILE}#${alarmName}`;
}
