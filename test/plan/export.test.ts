/**
 * plan/export.ts: a recording as `pulumi stack export` prints the state after `up`. The analyzer tier
 * (test/analyzer/stacks.test.ts) has the real CLI import and judge whole stacks; these pin each rule
 * of the format on a small recording, in process.
 */
import { expect } from "chai";
import { createDecipheriv, createHash, pbkdf2Sync } from "node:crypto";
import { type ResourceV3, defaultProviderUrn, stackExport, stackUrn } from "../../plan/export";
import { passphraseSecrets } from "../../plan/export-file";
import type { RecordedResource } from "../../policy/testing/types";

const P = "encache";
const S = "dev";
const urn = (t: string, n: string, parent?: string) => `urn:pulumi:${S}::${P}::${parent ? `${parent}$` : ""}${t}::${n}`;
const PART = urn("encache:parts:Ingest", "ingest");
const DLQ = urn("aws:sqs/queue:Queue", "dlq", "encache:parts:Ingest");
const QUEUE = urn("aws:sqs/queue:Queue", "jobs", "encache:parts:Ingest");
const VPC = urn("awsx:ec2:Vpc", "vpc");
/** The mock monitor's URN for a grandchild: only its parent's type, not the chain. */
const POLICY = urn("aws:sqs/queuePolicy:QueuePolicy", "jobs-policy", "aws:sqs/queue:Queue");

function rec(partial: Partial<RecordedResource> & Pick<RecordedResource, "urn" | "type" | "name">): RecordedResource {
  return { parent: null, custom: true, inputs: {}, outputs: {}, dependencies: [], propertyDependencies: {}, ...partial };
}

/** Registration order as the SDK may answer: the queue (which names its DLQ) before the DLQ, the part last. */
const RECORDING: RecordedResource[] = [
  rec({
    urn: QUEUE,
    type: "aws:sqs/queue:Queue",
    name: "jobs",
    parent: PART,
    id: "https://sqs/jobs",
    inputs: { redrivePolicy: '{"deadLetterTargetArn":"arn:dlq"}' },
    outputs: { arn: "arn:jobs", redrivePolicy: '{"deadLetterTargetArn":"arn:dlq"}' },
    dependencies: [DLQ],
    propertyDependencies: { redrivePolicy: [DLQ] },
    protect: true,
  }),
  rec({
    urn: POLICY,
    type: "aws:sqs/queuePolicy:QueuePolicy",
    name: "jobs-policy",
    parent: QUEUE,
    id: "jobs-policy",
    inputs: { queueUrl: QUEUE },
    dependencies: [QUEUE],
  }),
  rec({ urn: DLQ, type: "aws:sqs/queue:Queue", name: "dlq", parent: PART, id: "https://sqs/dlq", outputs: { arn: "arn:dlq" } }),
  rec({ urn: PART, type: "encache:parts:Ingest", name: "ingest", custom: false, outputs: { queueUrl: "https://sqs/jobs" } }),
  rec({ urn: VPC, type: "awsx:ec2:Vpc", name: "vpc", custom: false, inputs: { cidrBlock: "10.0.0.0/16" } }),
  rec({
    urn: urn("aws:ssm/parameter:Parameter", "p"),
    type: "aws:ssm/parameter:Parameter",
    name: "p",
    id: "/p",
    inputs: { value: "s3cret" },
    outputs: { value: "s3cret" },
    secretInputs: ["value"],
    secretOutputs: ["value"],
  }),
];

const doc = stackExport({
  project: P,
  stack: S,
  resources: RECORDING,
  providerVersions: { aws: "7.48.0", awsx: "3.9.0" },
  config: { "aws:region": "eu-west-1", "aws:allowedAccountIds": '["123456789012"]', "encache:environment": "dev" },
  stackOutputs: { queueUrl: "https://sqs/jobs" },
  time: "2026-01-01T00:00:00Z",
});
const byUrn = new Map(doc.deployment.resources.map((r) => [r.urn, r]));
const get = (u: string) => byUrn.get(u) as ResourceV3;
const AWS = defaultProviderUrn(P, S, "aws", "7.48.0");

describe("plan/export: the recording as `pulumi stack export` prints it", () => {
  it("is deployment version 3 with a manifest whose magic is the SHA-256 of its CLI version", () => {
    expect(doc.version).to.equal(3);
    const { manifest } = doc.deployment;
    expect(manifest.magic).to.equal(createHash("sha256").update(manifest.version).digest("hex"));
  });

  it("starts with the root Stack, a component with the program's outputs, and parents every top-level resource to it", () => {
    const root = doc.deployment.resources[0] as ResourceV3;
    expect(root).to.deep.equal({ urn: stackUrn(P, S), custom: false, type: "pulumi:pulumi:Stack", outputs: { queueUrl: "https://sqs/jobs" } });
    expect([get(PART).parent, get(VPC).parent, get(QUEUE).parent]).to.deep.equal([stackUrn(P, S), stackUrn(P, S), PART]);
  });

  const providerCases: Array<[string, string, string | undefined]> = [
    ["a custom AWS resource", QUEUE, AWS],
    ["a remote component (awsx)", VPC, defaultProviderUrn(P, S, "awsx", "3.9.0")],
    ["a local component", PART, undefined],
  ];
  for (const [what, u, provider] of providerCases) {
    it(`${what} ${provider ? "refers to its package's default provider as <urn>::<id>" : "names no provider"}`, () => {
      const ref = get(u).provider;
      if (!provider) expect(ref).to.equal(undefined);
      else expect(ref).to.equal(`${provider}::${get(provider).id}`);
    });
  }

  it("writes the engine's URNs, each with its parent's whole type chain, and every reference to them", () => {
    const engine = urn("aws:sqs/queuePolicy:QueuePolicy", "jobs-policy", "encache:parts:Ingest$aws:sqs/queue:Queue");
    expect(byUrn.has(POLICY)).to.equal(false);
    expect(get(engine)).to.deep.include({ parent: QUEUE, dependencies: [QUEUE], inputs: { queueUrl: QUEUE } });
  });

  it("gives the default provider its package's config and version as inputs, and an id", () => {
    const p = get(AWS);
    expect(p).to.include({ custom: true, type: "pulumi:providers:aws" });
    expect(p.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(p.inputs).to.deep.equal({ region: "eu-west-1", allowedAccountIds: '["123456789012"]', version: "7.48.0" });
    expect(p.outputs).to.deep.equal(p.inputs);
  });

  it("keeps ids on custom resources only, and protect, dependencies and property dependencies as recorded", () => {
    expect([get(QUEUE).id, get(PART).id]).to.deep.equal(["https://sqs/jobs", undefined]);
    expect(get(QUEUE)).to.deep.include({ protect: true, dependencies: [DLQ], propertyDependencies: { redrivePolicy: [DLQ] } });
    expect(get(DLQ).protect).to.equal(undefined);
  });

  it("orders every resource after its parent, its dependencies and its provider", () => {
    const order = doc.deployment.resources.map((r) => r.urn);
    const at = (u: string) => order.indexOf(u);
    for (const r of doc.deployment.resources) {
      const refs = [r.parent, r.provider?.split("::").slice(0, -1).join("::"), ...(r.dependencies ?? [])].filter((x): x is string => !!x);
      for (const ref of refs) expect(at(ref), `${r.urn} after ${ref}`).to.be.lessThan(at(r.urn));
    }
  });

  it("writes secrets as plaintext secret objects without a secrets manager", () => {
    const p = get(urn("aws:ssm/parameter:Parameter", "p"));
    const sig = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", plaintext: '"s3cret"' };
    expect([p.inputs?.value, p.outputs?.value]).to.deep.equal([sig, sig]);
    expect(doc.deployment.secrets_providers).to.equal(undefined);
  });

  it('seals secrets with a passphrase manager\'s key, and carries its state (`v1:<salt>:<sealed "pulumi">`)', () => {
    // Prepare
    const secrets = passphraseSecrets("correct horse");
    // Act
    const sealed = stackExport({ project: P, stack: S, resources: RECORDING, providerVersions: { aws: "7.48.0", awsx: "3.9.0" }, secrets });
    // Assess: the salt decrypts "pulumi" with the passphrase's key, as the CLI checks it.
    const { salt } = sealed.deployment.secrets_providers?.state as { salt: string };
    const [, saltB64, , nonceB64, boxB64] = salt.split(":") as [string, string, string, string, string];
    const key = pbkdf2Sync("correct horse", Buffer.from(saltB64, "base64"), 1_000_000, 32, "sha256");
    const open = (nonce: string, box: string) => {
      const raw = Buffer.from(box, "base64");
      const d = createDecipheriv("aes-256-gcm", key, Buffer.from(nonce, "base64"));
      d.setAuthTag(raw.subarray(raw.length - 16));
      return Buffer.concat([d.update(raw.subarray(0, raw.length - 16)), d.final()]).toString("utf8");
    };
    expect(open(nonceB64, boxB64)).to.equal("pulumi");
    const value = (sealed.deployment.resources.find((r) => r.urn.endsWith("::p"))?.inputs?.value ?? {}) as { ciphertext: string };
    const [, n, b] = value.ciphertext.split(":") as [string, string, string];
    expect(open(n, b)).to.equal('"s3cret"');
  });
});
