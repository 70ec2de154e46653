import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { REPO_ROOT } from "../../../infra/bundle";
import { RUNBOOK_FILE, runbookPointer } from "../../../infra/lib/runbook";
import { ofType } from "../helpers/plan-queries";
import { STACKS, useStackPlans } from "../helpers/run-plan";

const ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm";

/** The runbook's sections: the `###` headings under `## Alarms`, in order. Pure. */
export function runbookSections(markdown: string): string[] {
  const alarms = markdown.split(/^## Alarms$/m)[1];
  if (alarms === undefined) return [];
  const body = alarms.split(/^## /m)[0] ?? "";
  return [...body.matchAll(/^### (.+)$/gm)].map((m) => (m[1] ?? "").trim());
}

/**
 * docs/operations.md has one section per alarm the program declares, in either stack, and every
 * alarm's description points at its own section: the alarms are read from both stacks' plans, not
 * from a list of this test's own, so a new alarm without a runbook (or a runbook left behind by a
 * removed alarm) fails here.
 */
describe("every alarm has a runbook section, and every section an alarm", function () {
  this.timeout(120_000);
  const stacks = useStackPlans();
  const sections = () => runbookSections(fs.readFileSync(path.join(REPO_ROOT, RUNBOOK_FILE), "utf8"));

  it("reads the sections as the headings under ## Alarms", () => {
    // Prepare
    const markdown = "# t\n## The command\n### not-an-alarm\n## Alarms\n### a-depth\ntext\n### b-depth\n## After\n### c\n";
    // Act
    const found = runbookSections(markdown);
    // Assess
    expect(found).to.deep.equal(["a-depth", "b-depth"]);
  });

  for (const stack of STACKS) {
    it(`${stack}: each alarm's description ends with its own section, which exists`, () => {
      // Prepare
      const alarms = ofType(stacks[stack]!, ALARM);
      const known = new Set(sections());
      // Act
      const wrong = alarms.filter((a) => !String(a.inputs.alarmDescription ?? "").endsWith(runbookPointer(a.name)));
      const missing = alarms.filter((a) => !known.has(a.name)).map((a) => a.name);
      // Assess
      expect(alarms.length, "alarms in the plan").to.be.greaterThan(0);
      expect(
        wrong.map((a) => `${a.name}: ${String(a.inputs.alarmDescription)}`),
        "descriptions without their runbook",
      ).to.deep.equal([]);
      expect(missing, `alarms without a section in ${RUNBOOK_FILE}`).to.deep.equal([]);
    });
  }

  it("has no section without an alarm in one stack or the other, and none twice", () => {
    // Prepare
    const declared = new Set(STACKS.flatMap((s) => ofType(stacks[s]!, ALARM).map((a) => a.name)));
    // Act
    const found = sections();
    const orphans = found.filter((s) => !declared.has(s));
    const twice = found.filter((s, i) => found.indexOf(s) !== i);
    // Assess
    expect(orphans, "sections no alarm names").to.deep.equal([]);
    expect(twice, "sections written twice").to.deep.equal([]);
  });
});
