/**
 * A headless Chromium for the report's browser test: `CHROMIUM_PATH`, else the first Chromium or
 * Chrome on PATH. Where there is none the test fails, saying how to get one: a report whose
 * charts were never seen drawing is not a tested report.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ON_PATH = ["chromium", "chromium-browser", "google-chrome-stable", "google-chrome"];

export const NO_CHROMIUM =
  "no Chromium for the report's browser test: set CHROMIUM_PATH to a Chromium or Chrome binary, " +
  "or install one (as root on Debian/Ubuntu: `bash scripts/ensure-chromium.sh`, which runs `apt-get install -y chromium`; " +
  "`npm run test:local` runs it first)";

/** The browser's path; throws NO_CHROMIUM when there is none. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.CHROMIUM_PATH;
  if (given) {
    if (!isExecutable(given)) throw new Error(`CHROMIUM_PATH=${given} is not an executable file. ${NO_CHROMIUM}`);
    return given;
  }
  for (const name of ON_PATH) {
    for (const dir of (env.PATH ?? "").split(path.delimiter).filter(Boolean)) {
      const candidate = path.join(dir, name);
      if (isExecutable(candidate)) return candidate;
    }
  }
  throw new Error(NO_CHROMIUM);
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Runs headless Chromium on a local file with `flags` (e.g. `--dump-dom`, `--screenshot=…`) and
 * returns its stdout. Its own profile directory, so parallel runs do not fight over a lock.
 */
export function headless(browser: string, file: string, flags: string[], timeoutMs = 60_000): string {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "report-chromium-"));
  try {
    const out = spawnSync(
      browser,
      [
        "--headless",
        // Root in a container (CI) has no user namespace for the sandbox.
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--no-first-run",
        `--user-data-dir=${profile}`,
        ...flags,
        `file://${file}`,
      ],
      { encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
    );
    if (out.error) throw out.error;
    if (out.status !== 0) throw new Error(`${browser} exited ${out.status}: ${out.stderr.slice(-2000)}`);
    return out.stdout;
  } finally {
    fs.rmSync(profile, { recursive: true, force: true });
  }
}
