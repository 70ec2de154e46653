/** infra/parts/worker.image.ts: the worker image's tag covers everything its build reads. */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { REPO_ROOT } from "../../../infra/bundle";
import { dockerIgnoreFor, type ImageBuild, imageContentTag } from "../../../infra/parts/worker.image";
import { WORKER_DOCKERFILE, workerBuildArgs } from "../../../infra/parts/worker";
import { parseStackConfig } from "../../../infra/config";
import { stackConfig } from "../helpers/stack-config";

const DIGEST = `node:22-alpine@sha256:${"a".repeat(64)}`;
const BUILD: ImageBuild = {
  context: { "worker.js": "console.log(1)", ".dockerignore": dockerIgnoreFor("worker.js") },
  dockerfile: "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n",
  platform: "linux/amd64",
  buildArgs: { BASE_IMAGE: DIGEST },
};

describe("the worker image's content tag (imageContentTag, pure)", () => {
  it("is the same for the same build, whatever the order of its keys", () => {
    // Prepare
    const reordered: ImageBuild = {
      ...BUILD,
      context: { ".dockerignore": BUILD.context[".dockerignore"]!, "worker.js": "console.log(1)" },
      buildArgs: { ...BUILD.buildArgs },
    };
    // Act / Assess
    expect(imageContentTag(reordered)).to.equal(imageContentTag(BUILD));
    expect(imageContentTag(BUILD)).to.match(/^sha-[0-9a-f]{32}$/);
  });

  const changes: Array<[string, (b: ImageBuild) => ImageBuild]> = [
    ["the bundle", (b) => ({ ...b, context: { ...b.context, "worker.js": "console.log(2)" } })],
    ["a file added to the context", (b) => ({ ...b, context: { ...b.context, "extra.txt": "" } })],
    ["the .dockerignore", (b) => ({ ...b, context: { ...b.context, ".dockerignore": "*\n" } })],
    ["the Dockerfile", (b) => ({ ...b, dockerfile: `${b.dockerfile}USER node\n` })],
    ["the platform", (b) => ({ ...b, platform: "linux/arm64" })],
    ["the base image's digest", (b) => ({ ...b, buildArgs: { BASE_IMAGE: `node:22-alpine@sha256:${"b".repeat(64)}` } })],
    ["another build argument", (b) => ({ ...b, buildArgs: { ...b.buildArgs, NODE_OPTIONS: "--max-old-space-size=512" } })],
    // Length-prefixed fields: moving text from one field into the next is a different build.
    ["text moved between the Dockerfile and the platform", (b) => ({ ...b, dockerfile: `${b.dockerfile}linux`, platform: "/amd64" })],
    ["text moved between a build argument's name and value", (b) => ({ ...b, buildArgs: { BASE_IMAGE_: DIGEST.slice(1) } })],
  ];
  for (const [what, change] of changes) {
    it(`changes when ${what} changes`, () => {
      expect(imageContentTag(change(structuredClone(BUILD)))).to.not.equal(imageContentTag(BUILD));
    });
  }
});

describe("the worker's Dockerfile builds FROM the pinned base the config carries", () => {
  it("takes its base from the BASE_IMAGE build argument, with no default to fall back on", () => {
    const dockerfile = fs.readFileSync(path.join(REPO_ROOT, WORKER_DOCKERFILE), "utf8");
    const instructions = dockerfile.split("\n").filter((l) => /^[A-Z]+\s/.test(l));
    expect(instructions.slice(0, 2)).to.deep.equal(["ARG BASE_IMAGE", "FROM ${BASE_IMAGE}"]);
    expect(instructions.filter((l) => l.startsWith("FROM "))).to.have.length(1);
  });

  for (const stack of ["dev", "prod"]) {
    it(`${stack}: passes encache:worker.baseImage, pinned by digest, as BASE_IMAGE`, () => {
      const worker = parseStackConfig(stackConfig(stack)).worker;
      expect(workerBuildArgs(worker)).to.deep.equal({ BASE_IMAGE: worker.baseImage });
      expect(worker.baseImage).to.match(/@sha256:[0-9a-f]{64}$/);
    });
  }

  it("the context lets the build see the bundle only", () => {
    expect(
      dockerIgnoreFor("worker.js")
        .split("\n")
        .filter((l) => l && !l.startsWith("#")),
    ).to.deep.equal(["*", "!worker.js"]);
  });
});
