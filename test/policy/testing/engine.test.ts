/** policy/testing/engine.ts: what the engine hands the pack, after Check and on a first preview. */
import { expect } from "chai";
import { afterCheck, containsUnknown, firstPreview, UNKNOWN_STRING, updateView } from "../../../policy/testing/engine";
import type { RecordedResource } from "../../../policy/testing/types";

const QUEUE = "urn:pulumi:dev::encache::aws:sqs/queue:Queue::orders";
const POLICY = "urn:pulumi:dev::encache::aws:iam/rolePolicy:RolePolicy::orders-reader";
const COMPONENT = "urn:pulumi:dev::encache::encache:policy:DeclaredDocument::orders-reader-declared";
const queueArn = "arn:aws:sqs:us-east-1:123456789012:orders-1a2b3c4";

function recording(): RecordedResource[] {
  const doc = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: ["sqs:ReceiveMessage"], Resource: queueArn }] };
  return [
    {
      urn: QUEUE,
      type: "aws:sqs/queue:Queue",
      name: "orders",
      parent: null,
      custom: true,
      id: "https://sqs.us-east-1.amazonaws.com/123456789012/orders-1a2b3c4",
      inputs: { visibilityTimeoutSeconds: 60 },
      outputs: { visibilityTimeoutSeconds: 60, name: "orders-1a2b3c4", arn: queueArn, url: "https://sqs.us-east-1.amazonaws.com/123456789012/orders-1a2b3c4" },
      dependencies: [],
      propertyDependencies: {},
    },
    {
      urn: POLICY,
      type: "aws:iam/rolePolicy:RolePolicy",
      name: "orders-reader",
      parent: null,
      custom: true,
      inputs: { policy: doc, role: "reader" },
      outputs: { policy: doc, role: "reader" },
      dependencies: [QUEUE],
      propertyDependencies: { policy: [QUEUE] },
    },
    {
      urn: COMPONENT,
      type: "encache:policy:DeclaredDocument",
      name: "orders-reader-declared",
      parent: null,
      custom: false,
      inputs: { resource: "orders-reader", document: doc },
      outputs: { resource: "orders-reader", document: doc },
      dependencies: [QUEUE],
      propertyDependencies: { document: [QUEUE] },
    },
  ];
}

describe("engine model (policy/testing/engine.ts)", () => {
  it("after Check, an IAM document object is its JSON string; other inputs are untouched", () => {
    const out = afterCheck("aws:iam/rolePolicy:RolePolicy", { policy: { Statement: [] }, role: "r" });
    expect(out).to.deep.equal({ policy: '{"Statement":[]}', role: "r" });
    expect(afterCheck("aws:sqs/queue:Queue", { redrivePolicy: '{"a":1}', tags: { a: "b" } })).to.deep.equal({ redrivePolicy: '{"a":1}', tags: { a: "b" } });
  });

  it("after Check, a document with anything unknown inside is one unknown string (TransformJSONDocument)", () => {
    const out = afterCheck("aws:iam/policy:Policy", { policy: { Statement: [{ Resource: UNKNOWN_STRING, Action: ["s3:GetObject"] }] } });
    expect(out.policy).to.equal(UNKNOWN_STRING);
  });

  it("an update keeps every value known, documents as strings", () => {
    const [queue, policy] = updateView(recording());
    expect(containsUnknown(queue!.outputs)).to.equal(false);
    expect(typeof policy!.inputs.policy).to.equal("string");
  });

  it("a first preview: computed outputs are unknown, and so is every Optional+Computed one left unset; the auto-name and echoed inputs known", () => {
    const [queue] = firstPreview(recording());
    const U = UNKNOWN_STRING;
    // Queue's schema (policy/testing/provider-schema.json): arn, url Computed (tagsAll too, but known at
    // plan); redrivePolicy, policy, sqsManagedSseEnabled… Optional+Computed and unset here.
    expect(queue!.outputs).to.deep.equal({
      visibilityTimeoutSeconds: 60,
      name: "orders-1a2b3c4",
      arn: U,
      url: U,
      deduplicationScope: U,
      fifoThroughputLimit: U,
      kmsDataKeyReusePeriodSeconds: U,
      namePrefix: U,
      policy: U,
      redriveAllowPolicy: U,
      redrivePolicy: U,
      sqsManagedSseEnabled: U,
    });
  });

  it("a first preview: a document that embeds an unknown ARN is unknown whole; a component's input only at that leaf", () => {
    const [, policy, declared] = firstPreview(recording());
    expect(policy!.inputs.policy).to.equal(UNKNOWN_STRING);
    expect(policy!.inputs.role).to.equal("reader");
    expect(declared!.inputs.document).to.deep.equal({
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Action: ["sqs:ReceiveMessage"], Resource: UNKNOWN_STRING }],
    });
  });

  it("a first preview: a value only looks at the outputs of the resources its own property depends on", () => {
    const rs = recording();
    rs[1]!.propertyDependencies = {};
    const [, policy] = firstPreview(rs);
    expect(policy!.inputs.policy).to.be.a("string").and.not.equal(UNKNOWN_STRING);
  });

  it("a first preview: an ARN rebuilt from a computed one (its tail) is unknown too", () => {
    const rs = recording();
    (rs[1]!.inputs.policy as { Statement: Array<{ Resource: string }> }).Statement[0]!.Resource = "arn:aws:sqs:us-east-1:123456789012:orders-1a2b3c4-fifo";
    const [, , declared] = firstPreview([rs[0]!, rs[1]!, { ...rs[2]!, inputs: { resource: "orders-reader", document: rs[1]!.inputs.policy } }]);
    expect(JSON.stringify(declared!.inputs.document)).to.contain(UNKNOWN_STRING);
  });
});
