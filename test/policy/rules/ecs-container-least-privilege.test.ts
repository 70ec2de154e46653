/** policy/rules/ecs-container-least-privilege.ts: read-only root, non-root user, no capabilities, unless waived by label. */
import type { RecordedResource } from "../../../policy/testing/types";
import { W, setContainer, workerRecording } from "../helpers/worker";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "ecs-container-least-privilege";

describe(POLICY, () => {
  for (const mode of ["update", "first-preview"] as Mode[]) {
    it(`passes the hardened worker container (${mode})`, async () => {
      expectNoViolations(await evaluate(workerRecording(), { mode }));
    });
  }

  it("passes a check the stack config waived, named in the container's label", async () => {
    const rs = workerRecording();
    setContainer(rs, (c) => {
      delete c.user;
      c.dockerLabels = { "encache.hardening-waived": "user" };
    });
    expectNoViolations(await evaluate(rs));
  });

  const cases: Array<{ title: string; message: RegExp; mutate: (c: Record<string, unknown>) => void }> = [
    { title: "a writable root filesystem", message: /writable root filesystem/, mutate: (c) => (c.readonlyRootFilesystem = false) },
    { title: "no user (the image's, root by default)", message: /runs as the image's user/, mutate: (c) => delete c.user },
    { title: "root by uid", message: /runs as 0:0/, mutate: (c) => (c.user = "0:0") },
    { title: "capabilities kept", message: /keeps its Linux capabilities/, mutate: (c) => delete c.linuxParameters },
    {
      title: "a waiver for another check",
      message: /writable root filesystem/,
      mutate: (c) => ((c.readonlyRootFilesystem = false), (c.dockerLabels = { "encache.hardening-waived": "user" })),
    },
  ];
  for (const mode of ["update", "first-preview"] as Mode[]) {
    for (const c of cases) {
      it(`fails ${c.title} (${mode})`, async () => {
        // Prepare
        const rs: RecordedResource[] = workerRecording();
        setContainer(rs, c.mutate);
        // Act
        const violations = await evaluate(rs, { mode });
        // Assess (this fixture's container definitions hold no computed value, so they stay known on a first preview)
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: W.taskDefinition, message: c.message });
      });
    }
  }
});
