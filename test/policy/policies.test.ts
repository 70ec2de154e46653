/**
 * policy/policies.ts: the whole pack over each part's GOOD recording reports nothing, on a preview
 * of an existing stack and on a first preview (policy/testing/engine.ts: ARNs, URLs and ids
 * unknown, and so every IAM document and container definition built from them). Each rule's own
 * cases live in rules/<rule>.test.ts; test/policy/both-modes.test.ts catches each mandatory
 * rule's mutation in both modes.
 */
import type { RecordedResource } from "../../policy/testing/types";
import { fleetRecording } from "./helpers/fleet";
import { ingestRecording } from "./helpers/ingest";
import { ingestFleetRecording } from "./helpers/ingest-fleet";
import { platformRecording } from "./helpers/platform";
import { poolRecording } from "./helpers/pool";
import { retrainingRecording } from "./helpers/retraining";
import { workerRecording } from "./helpers/worker";
import { evaluate, expectNoViolations, type Mode } from "./helpers/violations";

describe("policies: the whole pack over the good recordings", () => {
  const recordings: [string, () => RecordedResource[]][] = [
    ["ingest", ingestRecording],
    ["ingest in fleet mode (an Auto Scaling group of Spot GPUs behind an internal load balancer)", ingestFleetRecording],
    ["fleet", fleetRecording],
    ["pool (with ingest's tag-conditioned StartInstances)", poolRecording],
    ["retraining", retrainingRecording],
    ["worker", workerRecording],
    ["platform (ingest plus a table, a scheduler DLQ and a schedule)", platformRecording],
  ];
  for (const mode of ["update", "first-preview"] as Mode[]) {
    for (const [title, recording] of recordings) {
      it(`reports nothing for ${title}, on ${mode === "update" ? "a preview of an existing stack" : "a first preview"}`, async () => {
        // Prepare
        const rs = recording();
        // Act
        const violations = await evaluate(rs, { mode });
        // Assess
        expectNoViolations(violations);
      });
    }
  }
});
