import { expect } from "chai";
import { parseJson } from "../../../local/aws/intercepting-proxy";

describe("local/aws/intercepting-proxy: parseJson, shared by the proxies and the chaos run's fault proxy", () => {
  const cases: Array<{ name: string; text: Buffer | string | undefined; want: Record<string, unknown> | undefined }> = [
    { name: "a JSON-protocol call", text: '{"QueueUrl":"http://q","MaxNumberOfMessages":10}', want: { QueueUrl: "http://q", MaxNumberOfMessages: 10 } },
    { name: "a buffered body, leading white space", text: Buffer.from(' \n{"Key":{"pk":{"S":"a"}}}'), want: { Key: { pk: { S: "a" } } } },
    { name: "no body", text: undefined, want: undefined },
    { name: "an empty body", text: "", want: undefined },
    { name: "a query-protocol body (EC2, Auto Scaling)", text: "Action=DescribeInstances&Version=2016-11-15", want: undefined },
    { name: "an XML answer", text: "<DescribeInstancesResponse/>", want: undefined },
    { name: "a JSON array", text: "[1,2]", want: undefined },
    { name: "a truncated object", text: '{"QueueUrl":', want: undefined },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.want === undefined ? "undefined" : "the object"}`, () => {
      // Act
      const got = parseJson(c.text);
      // Assess
      expect(got).to.deep.equal(c.want);
    });
  }
});
