/**
 * policy/policies.ts: the whole pack over each part's GOOD recording reports nothing, on an
 * update and on a first preview (when ARNs, URLs and redrive JSON are still unknown). Each
 * rule's own cases live in rules/<rule>.test.ts.
 */
import { UNKNOWN } from "../../policy/testing/evaluate";
import type { RecordedResource } from "../../policy/testing/types";
import { FU, fleetRecording } from "./helpers/fleet";
import { asFirstPreview, ingestRecording } from "./helpers/ingest";
import { platformRecording } from "./helpers/platform";
import { poolRecording } from "./helpers/pool";
import { find, setInput } from "./helpers/recording";
import { retrainingRecording } from "./helpers/retraining";
import { workerRecording } from "./helpers/worker";
import { evaluate, expectNoViolations } from "./helpers/violations";

/** The fleet's first preview: the jobs table's ARN in its consumers' role policies is unknown. */
function fleetFirstPreview(): RecordedResource[] {
  const rs = fleetRecording();
  for (const urn of [FU.housekeepingPolicy, FU.terminationPolicy]) {
    const doc = structuredClone(find(rs, urn).inputs.policy) as { Statement: Record<string, unknown>[] };
    for (const s of doc.Statement) if (String(s.Resource).includes("dynamodb")) s.Resource = UNKNOWN.unknownStringValue;
    setInput(rs, urn, "policy", doc);
  }
  return rs;
}

function ingestFirstPreview(): RecordedResource[] {
  const rs = ingestRecording();
  asFirstPreview(rs, UNKNOWN.unknownStringValue);
  return rs;
}

describe("policies: the whole pack over the good recordings", () => {
  const recordings: [string, () => RecordedResource[]][] = [
    ["ingest", ingestRecording],
    ["ingest on a first preview, when ARNs and redrive JSON are unknown", ingestFirstPreview],
    ["fleet", fleetRecording],
    ["fleet on a first preview, when the table ARN in the roles is still unknown", fleetFirstPreview],
    ["pool (with ingest's tag-conditioned StartInstances)", poolRecording],
    ["retraining", retrainingRecording],
    ["worker", workerRecording],
    ["platform (ingest plus a table, a scheduler DLQ and a schedule)", platformRecording],
  ];
  for (const [title, recording] of recordings) {
    it(`reports nothing for ${title}`, async () => {
      // Prepare
      const rs = recording();
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });
  }
});
