/**
 * Writes policy/testing/provider-schema.json: which attributes the AWS provider computes, for every
 * type the program declares, read from the installed @pulumi/aws typings
 * (plan/provider/schema-from-typings.ts). Run after upgrading @pulumi/aws:
 *
 *   npm run provider-schema
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { providerSchema } from "../plan/provider/schema-from-typings";

const root = path.resolve(__dirname, "..");
const out = path.join(root, "policy/testing/provider-schema.json");
const schema = providerSchema(path.join(root, "node_modules"));
fs.writeFileSync(out, `${JSON.stringify(schema, null, 2)}\n`);
const attrs = Object.values(schema.types).reduce((n, t) => n + t.computed.length + t.optionalComputed.length, 0);
process.stdout.write(
  `${path.relative(root, out)}: ${Object.keys(schema.types).length} types, ${attrs} computed attributes (top level), from ${schema.source.package} ${schema.source.version}\n`,
);
