/** policy/rules/gpu-group-template-hardened.ts: a group launches from a template of the stack, which launch-template-hardened holds (issue 27). */
import type { RecordedResource } from "../../../policy/testing/types";
import { F, FT, ingestFleetRecording } from "../helpers/ingest-fleet";
import { T, add, editInput, find, resource, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "gpu-group-template-hardened";

/** The group in the single-template form, its launchTemplate given as `template` and derived from `deps`. */
function singleTemplate(rs: RecordedResource[], template: Record<string, unknown>, deps: string[]): void {
  setInput(rs, F.group, "mixedInstancesPolicy", undefined);
  setInput(rs, F.group, "launchTemplate", template);
  setInput(rs, F.group, "capacityRebalance", undefined);
  const group = find(rs, F.group);
  delete group.propertyDependencies.mixedInstancesPolicy;
  group.propertyDependencies.launchTemplate = deps;
}

describe(POLICY, () => {
  for (const mode of ["update", "first-preview"] as Mode[]) {
    it(`passes the good ingest fleet-mode recording: the mixed policy's template is the stack's (${mode})`, async () => {
      // Prepare
      const rs = ingestFleetRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });
  }

  it("built in one line: fails a group launching from a template id no resource of the stack gives", async () => {
    // Prepare
    const rs = [resource(FT.group, "g", { minSize: 0, maxSize: 1, launchTemplate: { id: "lt-0abc", version: "$Default" } })];
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectViolation(violations, {
      policy: POLICY,
      level: "mandatory",
      urn: urnOf(FT.group, "g"),
      message: /^Auto Scaling group 'g' launches from no LaunchTemplate in this stack: .* launch-template-hardened cannot check what it launches/,
    });
  });

  describe("fails", () => {
    const parameter = urnOf(T.parameter, "gpu-template-id");
    const cases: { title: string; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a mixed policy naming a template by a literal id (outside the stack)",
        mutate: (rs) => {
          find(rs, F.group).propertyDependencies.mixedInstancesPolicy = [];
          editInput(
            rs,
            F.group,
            "mixedInstancesPolicy",
            (m) => ((m.launchTemplate as Record<string, Record<string, unknown>>).launchTemplateSpecification!.launchTemplateId = "lt-0shared"),
          );
        },
      },
      { title: "launchTemplate.id given as a literal", mutate: (rs) => singleTemplate(rs, { id: "lt-0shared", version: "$Latest" }, []) },
      {
        title: "a template id read from an SSM parameter (a resource of the stack, but not a LaunchTemplate)",
        mutate: (rs) => {
          add(rs, resource(T.parameter, "gpu-template-id", { name: "/encache/dev/gpu/template", type: "String", value: "lt-0shared" }));
          singleTemplate(rs, { id: "lt-0shared", version: "$Latest" }, [parameter]);
        },
      },
      {
        title: "a launch configuration instead of a template",
        mutate: (rs) => {
          singleTemplate(rs, {}, []);
          setInput(rs, F.group, "launchTemplate", undefined);
          setInput(rs, F.group, "launchConfiguration", "gpu-legacy-lc");
        },
      },
    ];
    for (const mode of ["update", "first-preview"] as Mode[]) {
      for (const c of cases) {
        it(`${c.title} (${mode})`, async () => {
          // Prepare
          const rs = ingestFleetRecording();
          c.mutate(rs);
          // Act
          const violations = await evaluate(rs, { mode });
          // Assess
          // The scaler GETs each instance's status: with no template of the stack, their groups cannot be verified either.
          expectViolation(violations, {
            policy: POLICY,
            level: "mandatory",
            urn: F.group,
            message: /launches from no LaunchTemplate in this stack/,
            also: [["gpu-paths-admitted", F.scalerFn]],
          });
        });
      }
    }
  });

  it("passes a single-template group naming the stack's template by name", async () => {
    // Prepare
    const rs = ingestFleetRecording();
    singleTemplate(rs, { name: "ingest-gpu-lt", version: "$Latest" }, [F.launchTemplate]);
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  it("leaves the template's hardening to launch-template-hardened, which now reaches it", async () => {
    // Prepare
    const rs = ingestFleetRecording();
    editInput(rs, F.launchTemplate, "metadataOptions", (m) => (m.httpTokens = "optional"));
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectViolation(violations, { policy: "launch-template-hardened", level: "mandatory", urn: F.launchTemplate, message: /must require IMDSv2/ });
  });
});
