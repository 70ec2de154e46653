/* global require, process, console, Request, URL, Buffer */
/* eslint-disable @typescript-eslint/no-require-imports -- plain CommonJS: a worker has no TypeScript loader */
/**
 * One Lambda execution environment, run as a worker_threads Worker by lambda-host.ts.
 *
 * Plain CommonJS on purpose: a worker does not inherit tsx's loader, and a function serialised
 * with toString() would carry the transpiler's helpers. The host gives each worker its own
 * process.env (the function's environment), so module-scope code in the bundle reads its own
 * values at cold start, as in a real sandbox.
 *
 * Protocol (parentPort messages):
 *   worker → host  { type: "ready" } | { type: "init-error", error }
 *   host → worker  { type: "invoke", id, event (JSON), context, deadline, routes } | { type: "shutdown" }
 *   worker → host  { type: "result", id, ok: true, response (JSON) } | { ..., ok: false, error }
 */
"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const util = require("node:util");

const { codePath, exportName, clock, crashable, logFile } = workerData;
const realNow = Date.now.bind(Date);

// The simulated clock (--speed): installed before the bundle loads, so every `Date` it makes,
// including the SDK's and Powertools', reads simulated time. Timers stay real.
if (clock && clock.speed > 1) {
  const RealDate = Date;
  const simNow = () => clock.t0Ms + (realNow() - clock.t0Ms) * clock.speed;
  class SimDate extends RealDate {
    constructor(...args) {
      super(...(args.length === 0 ? [simNow()] : args));
    }
    static now() {
      return simNow();
    }
  }
  // `Date()` called without `new` returns a string; a class can't be called, a proxy can.
  globalThis.Date = new Proxy(SimDate, { apply: () => new SimDate().toString() });
}
const speed = clock && clock.speed > 1 ? clock.speed : 1;
let routes = {};
let currentRequestId = "";

// The Node.js runtime prefixes console lines with time, request id and level.
const LEVELS = { log: "INFO", info: "INFO", warn: "WARN", error: "ERROR", debug: "DEBUG", trace: "TRACE" };
for (const [method, level] of Object.entries(LEVELS)) {
  const stream = level === "ERROR" || level === "WARN" ? process.stderr : process.stdout;
  console[method] = (...args) => {
    stream.write(`${new Date().toISOString()}\t${currentRequestId || "undefined"}\t${level}\t${util.format(...args)}\n`);
  };
}

// Plays the VPC: a call to a private address (the GPU's "10.0.1.5:8080") reaches a local server.
const realFetch = globalThis.fetch;
globalThis.fetch = function routedFetch(input, init) {
  const isRequest = typeof Request !== "undefined" && input instanceof Request;
  const href = isRequest ? input.url : String(input);
  if (!URL.canParse(href)) return realFetch(input, init);
  const url = new URL(href);
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  const target = routes[`${url.hostname}:${port}`] ?? routes[url.hostname];
  if (!target) return realFetch(input, init);
  url.host = target;
  return realFetch(isRequest ? new Request(url.href, input) : url.href, init);
};

// A crashable sandbox (the chaos run's --crash-rate) writes its output straight to the function's
// log file, synchronously: a worker thread's stdout reaches the host through messages, which a kill
// (terminate) drops, while on Lambda every line written before a SIGKILL is in CloudWatch.
if (crashable && logFile) {
  const fs = require("node:fs");
  const fd = fs.openSync(logFile, "a");
  for (const stream of [process.stdout, process.stderr]) {
    stream.write = (chunk, encoding, callback) => {
      const done = typeof encoding === "function" ? encoding : callback;
      fs.writeSync(fd, typeof chunk === "string" ? chunk : Buffer.from(chunk));
      if (typeof done === "function") process.nextTick(done);
      return true;
    };
  }
}

// The chaos run (--crash-rate) kills the sandbox that made a given AWS call: each outgoing HTTP
// request names the invocation under way (`x-local-invocation`), which the fault proxy reads and
// strips. Installed before the bundle loads, so the SDK's handler takes the wrapped request.
if (crashable) {
  for (const mod of [require("node:http"), require("node:https")]) {
    const original = mod.request;
    mod.request = function taggedRequest(...args) {
      const req = original.apply(this, args);
      // Headers already sent: the call goes untagged, and is never chosen for a kill.
      if (currentRequestId && !req.headersSent) req.setHeader("x-local-invocation", currentRequestId);
      return req;
    };
  }
}

function describe(err) {
  if (err instanceof Error) return { name: err.name || "Error", message: err.message };
  return { name: "Error", message: typeof err === "string" ? err : util.inspect(err) };
}

let handler;
try {
  const mod = require(codePath);
  handler = mod[exportName];
  if (typeof handler !== "function") {
    throw Object.assign(new Error(`${codePath} does not export a function named ${exportName}`), { name: "Runtime.HandlerNotFound" });
  }
  parentPort.postMessage({ type: "ready" });
} catch (err) {
  process.stderr.write(`INIT_ERROR\t${util.inspect(err)}\n`);
  parentPort.postMessage({ type: "init-error", error: describe(err) });
}

function runHandler(event, context) {
  // Callback-style handlers (three parameters) still exist in older code.
  if (handler.length >= 3) {
    return new Promise((resolve, reject) => {
      const out = handler(event, context, (err, value) => (err ? reject(err) : resolve(value)));
      if (out && typeof out.then === "function") out.then(resolve, reject);
    });
  }
  return Promise.resolve().then(() => handler(event, context));
}

parentPort.on("message", async (msg) => {
  // Exits once everything written so far reached the host (terminate() would drop the tail).
  if (msg.type === "shutdown") return process.stdout.write("", () => process.stderr.write("", () => process.exit(0)));
  if (msg.type !== "invoke" || !handler) return;
  routes = msg.routes || {};
  currentRequestId = msg.context.awsRequestId;
  const context = {
    ...msg.context,
    callbackWaitsForEmptyEventLoop: true,
    // The deadline is real time; the function measures in (simulated) Date time.
    getRemainingTimeInMillis: () => Math.max(0, (msg.deadline - realNow()) * speed),
  };
  const started = realNow();
  process.stdout.write(`START RequestId: ${currentRequestId} Version: $LATEST\n`);
  let reply;
  try {
    const value = await runHandler(JSON.parse(msg.event), context);
    // Lambda serialises the response as JSON: undefined becomes null, functions vanish.
    const json = JSON.stringify(value === undefined ? null : value);
    reply = { type: "result", id: msg.id, ok: true, response: json === undefined ? "null" : json };
  } catch (err) {
    console.error(util.inspect(err));
    reply = { type: "result", id: msg.id, ok: false, error: describe(err) };
  }
  process.stdout.write(`END RequestId: ${currentRequestId}\nREPORT RequestId: ${currentRequestId}\tDuration: ${realNow() - started} ms\n`);
  currentRequestId = "";
  parentPort.postMessage(reply);
});
