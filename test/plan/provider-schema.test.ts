/**
 * policy/testing/provider-schema.json: which attributes the AWS provider computes, per type, from
 * the installed @pulumi/aws typings (plan/provider/schema-from-typings.ts). The committed table must
 * be what the installed provider says, and agree with the lines traced upstream.
 */
import * as path from "node:path";
import { expect } from "chai";
import { REPO_ROOT } from "../../infra/bundle";
import { TRACES, UPSTREAM, providerSchema, typingsOf } from "../../plan/provider/schema-from-typings";
import { PROVIDER_SCHEMA } from "../../policy/testing/provider-model";

describe("the provider schema table (policy/testing/provider-schema.json)", function () {
  // Parsing @pulumi/aws's types/input.d.ts and output.d.ts takes a few seconds.
  this.timeout(60_000);

  it("is what the installed @pulumi/aws typings say (run `npm run provider-schema` after an upgrade)", () => {
    // Act
    const fresh = providerSchema(path.join(REPO_ROOT, "node_modules"));
    // Assess
    expect(PROVIDER_SCHEMA).to.deep.equal(JSON.parse(JSON.stringify(fresh)));
  });

  it("covers every type named in UPSTREAM, each with its terraform-provider-aws file", () => {
    expect(Object.keys(PROVIDER_SCHEMA.types).sort()).to.deep.equal(Object.keys(UPSTREAM).sort());
    for (const [type, entry] of Object.entries(PROVIDER_SCHEMA.types)) expect(entry.upstream, type).to.match(/^internal\/service\/[a-z0-9]+\/[a-z0-9_]+\.go$/);
  });

  for (const t of TRACES) {
    it(`agrees with ${t.upstream} L${t.lines} @ ${t.commit.slice(0, 8)}: ${t.type} ${t.attribute} is ${t.kind}`, () => {
      expect(PROVIDER_SCHEMA.types[t.type]?.upstream).to.equal(t.upstream);
      expect(PROVIDER_SCHEMA.types[t.type]?.[t.kind]).to.include(t.attribute);
    });
  }

  // The whole of aws_sqs_queue's schema, read at queue.go @ 00a35305 lines 45-175: every Computed
  // and Optional+Computed attribute, and nothing else.
  it("lists exactly the computed attributes of aws_sqs_queue's upstream schema", () => {
    expect(PROVIDER_SCHEMA.types["aws:sqs/queue:Queue"]).to.deep.include({
      computed: ["arn", "tagsAll", "url"],
      optionalComputed: [
        "deduplicationScope",
        "fifoThroughputLimit",
        "kmsDataKeyReusePeriodSeconds",
        "name",
        "namePrefix",
        "policy",
        "redriveAllowPolicy",
        "redrivePolicy",
        "region",
        "sqsManagedSseEnabled",
      ],
    });
  });

  it("records Optional+Computed nested fields of a block (a table's TTL, a launch template's metadata options)", () => {
    expect(PROVIDER_SCHEMA.types["aws:dynamodb/table:Table"]?.optionalComputed).to.include.members(["ttl", "pointInTimeRecovery"]);
    expect(PROVIDER_SCHEMA.types["aws:ec2/launchTemplate:LaunchTemplate"]?.nested?.metadataOptions?.optionalComputed).to.include.members([
      "httpEndpoint",
      "httpTokens",
    ]);
  });

  const tokens: Array<[string, string, string]> = [
    ["aws:iam/role:Role", "iam/role.d.ts", "Role"],
    ["aws:ec2/launchTemplate:LaunchTemplate", "ec2/launchTemplate.d.ts", "LaunchTemplate"],
    ["aws:sqs/redriveAllowPolicy:RedriveAllowPolicy", "sqs/redriveAllowPolicy.d.ts", "RedriveAllowPolicy"],
  ];
  for (const [token, file, className] of tokens) {
    it(`finds ${token} in ${file}`, () => expect(typingsOf(token)).to.deep.equal({ file, className }));
  }

  it("refuses a token that is not an AWS resource", () => {
    expect(() => typingsOf("encache:parts:Ingest")).to.throw(/not an aws resource token/);
  });
});
