import { expect } from "chai";
import { parseAdvert, unsuitability } from "../../../functions/pool/advert";
import { advert } from "../helpers/pool-fakes";

const reasonOf = (body: string | undefined): string => {
  const parsed = parseAdvert(body);
  return parsed.ok ? "" : parsed.reason;
};

describe("advert", () => {
  describe("parseAdvert", () => {
    it("a message without a body is not JSON", () => {
      expect(reasonOf(undefined)).to.match(/^body is not JSON: .*end of JSON input/);
    });

    it("JSON that is not an object is a schema error of the body itself", () => {
      expect(reasonOf("42")).to.match(/^schema: body: \S/);
    });

    it("names every invalid field, separated by semicolons", () => {
      expect(reasonOf(JSON.stringify(advert({ cpu: 0, memory_mib: -1 })))).to.match(/^schema: cpu: [^;]+; memory_mib: [^;]+$/);
    });

    const instanceIds: Array<[string, boolean]> = [
      ["i-0123456789abcdef0", true],
      ["i-01234567", true],
      ["xi-0123456789abcdef0", false],
      ["i-0123456789abcdef0x", false],
      ["i-0123456", false],
    ];
    for (const [id, valid] of instanceIds) {
      it(`${valid ? "accepts" : "rejects"} the instance id ${id} (the whole value must be an EC2 instance id)`, () => {
        const parsed = parseAdvert(JSON.stringify(advert({ instance_id: id })));
        expect(parsed.ok).to.equal(valid);
        if (!parsed.ok) expect(parsed.reason).to.equal("schema: instance_id: must be an EC2 instance id");
      });
    }

    it("says why an instance type is invalid", () => {
      expect(reasonOf(JSON.stringify(advert({ instance_type: "not a type" })))).to.equal("schema: instance_type: must be an EC2 instance type");
    });

    it("accepts an advertised_at with a UTC offset", () => {
      const parsed = parseAdvert(JSON.stringify(advert({ advertised_at: "2026-01-01T02:00:00+02:00" })));
      expect(parsed.ok, parsed.ok ? "" : parsed.reason).to.equal(true);
    });
  });

  describe("unsuitability", () => {
    const cases: Array<[string, Parameters<typeof unsuitability>[1], string | null]> = [
      ["no requirements", {}, null],
      ["minimums the advert meets exactly", { minCpu: 4, minMemoryMib: 16384 }, null],
      ["one vCPU too few", { minCpu: 5 }, "cpu"],
      ["one MiB too little", { minMemoryMib: 16385 }, "memory_mib"],
    ];
    for (const [title, requirements, expected] of cases) {
      it(`${title}: ${expected ?? "suitable"}`, () => {
        expect(unsuitability(advert(), requirements)).to.equal(expected);
      });
    }
  });
});
