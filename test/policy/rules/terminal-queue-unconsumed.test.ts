/** policy/rules/terminal-queue-unconsumed.ts: a quarantine, or a DLQ no queue redrives into, is read by no event source mapping. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { X, platformRecording } from "../helpers/platform";
import { add, mapping, queueArn, setInput } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "terminal-queue-unconsumed";
const MODES: Mode[] = ["update", "first-preview"];

describe(POLICY, () => {
  for (const mode of MODES) {
    it(`${mode}: passes the ingest recording, whose DLQ consumer reads a DLQ that the source queue redrives into`, async () => {
      // Prepare
      const rs = ingestRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });
  }

  const cases: { title: string; recording: () => RecordedResource[]; urn: string; also?: [string, string][]; mutate: (rs: RecordedResource[]) => void }[] = [
    {
      title: "a mapping that reads the quarantine queue",
      recording: ingestRecording,
      urn: U.quarantine,
      mutate: (rs) => {
        setInput(rs, U.quarantine, "visibilityTimeoutSeconds", 400);
        add(
          rs,
          mapping(
            "ingest-quarantine-reader",
            { eventSourceArn: queueArn("ingest-quarantine"), functionName: "ingest-window", functionResponseTypes: ["ReportBatchItemFailures"] },
            { deps: { eventSourceArn: [U.quarantine], functionName: [U.windowFn] }, state: {} },
          ),
        );
      },
    },
    {
      title: "a consumer reading a terminal scheduler DLQ",
      recording: platformRecording,
      urn: X.scheduleDlq,
      also: [["visibility-timeout-covers-consumer", X.scheduleDlq]],
      mutate: (rs) =>
        add(
          rs,
          mapping(
            "drain-schedules-dlq",
            { batchSize: 1, functionResponseTypes: ["ReportBatchItemFailures"] },
            { deps: { eventSourceArn: [X.scheduleDlq], functionName: [U.windowFn] }, state: {} },
          ),
        ),
    },
  ];
  for (const c of cases) {
    for (const mode of MODES) {
      it(`${mode}: fails ${c.title}`, async () => {
        // Prepare
        const rs = c.recording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs, { mode });
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: /terminal sink but event source mapping/, also: c.also });
      });
    }
  }
});
