/** policy/testing/provider-model.ts: what the AWS provider computes on a first preview and stores after a create. */
import { expect } from "chai";
import { firstPreview, UNKNOWN_STRING, updateView } from "../../../policy/testing/engine";
import { computedUnsetAttributes, storedContainerDefinitions, storedOutputs } from "../../../policy/testing/provider-model";
import type { RecordedResource } from "../../../policy/testing/types";

const U = UNKNOWN_STRING;

function rec(type: string, name: string, inputs: Record<string, unknown>, extra: Partial<RecordedResource> = {}): RecordedResource {
  return {
    urn: `urn:pulumi:dev::encache::${type}::${name}`,
    type,
    name,
    parent: null,
    custom: true,
    inputs,
    outputs: { ...inputs, name },
    dependencies: [],
    propertyDependencies: {},
    ...extra,
  };
}

describe("provider model (policy/testing/provider-model.ts)", () => {
  describe("a first preview", () => {
    it("makes a Role's inlinePolicies and managedPolicyArns unknown when the program leaves them unset (Optional+Computed)", () => {
      // Prepare
      const role = rec("aws:iam/role:Role", "r", { assumeRolePolicy: "{}" });
      // Act
      const [view] = firstPreview([role]);
      // Assess
      expect(view!.outputs).to.include({ inlinePolicies: U, managedPolicyArns: U, arn: U, uniqueId: U, createDate: U, namePrefix: U, name: "r" });
      expect(view!.outputs).to.not.have.property("tagsAll");
    });

    it("keeps an Optional+Computed attribute the program sets, as it set it", () => {
      const table = rec("aws:dynamodb/table:Table", "t", { ttl: { enabled: true, attributeName: "expires_at" }, hashKey: "k" });
      const [view] = firstPreview([table]);
      expect(view!.outputs.ttl).to.deep.equal({ enabled: true, attributeName: "expires_at" });
      expect(view!.outputs.pointInTimeRecovery).to.equal(U);
    });

    it("makes the computed fields of a block the program sets unknown, and leaves the fields it sets", () => {
      const lt = rec("aws:ec2/launchTemplate:LaunchTemplate", "lt", { metadataOptions: { httpTokens: "required" } });
      const [view] = firstPreview([lt]);
      expect(view!.outputs.metadataOptions).to.deep.include({ httpTokens: "required", httpEndpoint: U, instanceMetadataTags: U });
    });

    it("names the table and the command when a recording declares a type the table lacks", () => {
      const odd = rec("aws:s3/bucket:Bucket", "b", {});
      expect(() => firstPreview([odd])).to.throw(/aws:s3\/bucket:Bucket is not in policy\/testing\/provider-schema\.json.*npm run provider-schema/);
      expect(() => updateView([odd])).to.throw(/aws:s3\/bucket:Bucket is not in policy\/testing\/provider-schema\.json/);
    });

    it("lists what is unknown: Computed, and Optional+Computed left unset, less what the provider knows at plan time", () => {
      expect(computedUnsetAttributes({ type: "aws:sqs/queue:Queue", inputs: { redrivePolicy: "{}", name: "q" } })).to.have.members([
        "arn",
        "url",
        "deduplicationScope",
        "fifoThroughputLimit",
        "kmsDataKeyReusePeriodSeconds",
        "namePrefix",
        "policy",
        "redriveAllowPolicy",
        "sqsManagedSseEnabled",
      ]);
    });
  });

  describe("an update: what the provider stores", () => {
    it("stores container definitions in the provider's order (byte order, not localeCompare), with ECS's defaults", () => {
      // Prepare: localeCompare puts AWS_REGION before AWSX; Go's cmp.Compare ("_" is 0x5F > "X") does not.
      const containers = [
        {
          name: "web",
          image: "i",
          environment: [
            { name: "AWS_REGION", value: "r" },
            { name: "AWSX", value: "1" },
          ],
          secrets: [
            { name: "b", valueFrom: "x" },
            { name: "a", valueFrom: "y" },
          ],
        },
        { name: "api", image: "j", environment: [{ name: "", value: "" }] },
      ];
      // Act
      const stored = JSON.parse(String(storedContainerDefinitions(JSON.stringify(containers)))) as Array<Record<string, unknown>>;
      // Assess
      expect(stored.map((c) => c.name)).to.deep.equal(["api", "web"]);
      expect((stored[1]!.environment as Array<{ name: string }>).map((e) => e.name)).to.deep.equal(["AWSX", "AWS_REGION"]);
      expect((stored[1]!.secrets as Array<{ name: string }>).map((e) => e.name)).to.deep.equal(["a", "b"]);
      // compactArrays dropped the zero-valued entry; ECS's defaults are filled in; keys sorted.
      expect(stored[0]).to.deep.equal({
        cpu: 0,
        environment: [],
        essential: true,
        image: "j",
        mountPoints: [],
        name: "api",
        portMappings: [],
        systemControls: [],
        volumesFrom: [],
      });
    });

    it("reads a Role's inline policies and managed policies back from IAM after a refresh: its RolePolicy documents and attachments", () => {
      // Prepare
      const role = rec("aws:iam/role:Role", "r", { assumeRolePolicy: '{"Version":"2012-10-17"}' });
      const policy = rec(
        "aws:iam/rolePolicy:RolePolicy",
        "p",
        { role: "r", policy: '{"Statement":[],"Version":"2012-10-17"}' },
        { propertyDependencies: { role: [role.urn] } },
      );
      const attach = rec(
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "a",
        { role: "r", policyArn: "arn:aws:iam::aws:policy/X" },
        { propertyDependencies: { role: [role.urn] } },
      );
      const other = rec("aws:iam/rolePolicy:RolePolicy", "q", { role: "s", policy: "{}" });
      // Act
      const out = storedOutputs(role, [role, policy, attach, other]);
      // Assess
      expect(out.inlinePolicies).to.deep.equal([{ name: "p", policy: '{"Statement":[],"Version":"2012-10-17"}' }]);
      expect(out.managedPolicyArns).to.deep.equal(["arn:aws:iam::aws:policy/X"]);
    });

    const unsetDefaults: Array<[string, Record<string, unknown>, string, unknown]> = [
      ["aws:sqs/queue:Queue", {}, "redrivePolicy", ""],
      ["aws:dynamodb/table:Table", { hashKey: "k" }, "ttl", { enabled: false, attributeName: "" }],
      ["aws:dynamodb/table:Table", { hashKey: "k" }, "pointInTimeRecovery", { enabled: false, recoveryPeriodInDays: 0 }],
    ];
    for (const [type, inputs, key, value] of unsetDefaults) {
      it(`stores ${type} ${key} as AWS answers when the program leaves it unset`, () => {
        expect(storedOutputs(rec(type, "x", inputs), [])[key]).to.deep.equal(value);
      });
    }

    it("stores a JSON document as structure.NormalizeJsonString leaves it: keys sorted", () => {
      const p = rec("aws:iam/rolePolicy:RolePolicy", "p", {
        role: "r",
        policy: '{"Version":"2012-10-17","Statement":[{"Resource":"*","Effect":"Allow","Action":"s3:GetObject"}]}',
      });
      expect(storedOutputs(p, []).policy).to.equal('{"Statement":[{"Action":"s3:GetObject","Effect":"Allow","Resource":"*"}],"Version":"2012-10-17"}');
    });

    it("leaves components and what the program set alone", () => {
      const component = { ...rec("encache:parts:Ingest", "ingest", { a: 1 }), custom: false };
      expect(storedOutputs(component, [])).to.equal(component.outputs);
      expect(storedOutputs(rec("aws:sqs/queue:Queue", "q", { redrivePolicy: '{"x":1}' }), []).redrivePolicy).to.equal('{"x":1}');
    });
  });
});
