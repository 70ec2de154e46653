/**
 * The local run's terminal output, without a terminal: a fake stream collects the writes, a fake
 * clock and fake timers drive throttling, and a tiny screen model replays the TTY escapes so a
 * test asserts what a person would see.
 */
import { expect } from "chai";
import { formatTiming, renderAlarmReport, renderSummaryTable, summaryDocument } from "../../../local/show/summary";
import { type LiveSnapshot, LiveView, renderPlainLine, renderSnapshot, type ScenarioSummary, type ViewTimers } from "../../../local/show/view";
import { runTime } from "../../../local/observe/alarm-eval";
import type { AlarmOutcome, AlarmReport } from "../../../local/observe/alarm-watch";

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
const RED = "\x1b[31m";
const GREEN = "\x1b[32m";

function visible(line: string): string {
  return line.replace(ANSI, "");
}

function snapshot(over: Partial<LiveSnapshot> = {}): LiveSnapshot {
  return {
    scenario: "ingest-gpu-outage",
    elapsedMs: 12_345,
    progress: { done: 40, total: 120 },
    queues: [
      { label: "ingest", visible: 10, inFlight: 2 },
      { label: "ingest-dlq", visible: 0, inFlight: 0 },
    ],
    counters: { processed: 40, quarantined: 0, "in DLQ": 0 },
    status: ["GPU: running (serving)"],
    ...over,
  };
}

function summary(over: Partial<ScenarioSummary> = {}): ScenarioSummary {
  return {
    scenario: "ingest-gpu-outage",
    wallMs: 20_123,
    sent: 120,
    processed: 117,
    quarantined: 2,
    inDlq: 1,
    remaining: 0,
    lost: 0,
    timings: { "GPU up → backlog drained": { wallMs: 12_345, simulatedSeconds: 740.7 }, "first segments in DLQ": null },
    details: {},
    failures: [],
    ...over,
  };
}

function alarmOutcome(over: Partial<AlarmOutcome> = {}): AlarmOutcome {
  return {
    alarm: "ingest-dlq-depth-abc1234",
    logicalName: "ingest-dlq-depth",
    queue: "ingest-dlq-9f8e7d6",
    statistic: "Maximum",
    comparisonOperator: "GreaterThanOrEqualToThreshold",
    threshold: 1,
    periodSeconds: 300,
    evaluationPeriods: 1,
    firings: [],
    notified: [],
    unreachableActions: [],
    ...over,
  };
}

function alarmReport(alarms: AlarmOutcome[], over: Partial<AlarmReport> = {}): AlarmReport {
  return { samples: 120, sampleEverySimMs: 60_000, published: 0, alarms, ...over };
}

/** A writable stream that keeps every write, with optional terminal size. */
class FakeStream {
  writes: string[] = [];
  columns?: number;
  rows?: number;
  write(chunk: string): boolean {
    this.writes.push(chunk);
    return true;
  }
  get text(): string {
    return this.writes.join("");
  }
  asStream(): NodeJS.WritableStream {
    // The view only calls write() and reads columns/rows; a full stream is not needed.
    return this as unknown as NodeJS.WritableStream;
  }
}

class FakeClock {
  t = 0;
  now = (): number => this.t;
}

/** Timers fired by hand: `fire()` runs what is pending, as the event loop would after the delay. */
class FakeTimers implements ViewTimers {
  private pending = new Map<number, () => void>();
  private next = 0;
  set(fn: () => void, _ms: number): unknown {
    this.pending.set(++this.next, fn);
    return this.next;
  }
  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  get count(): number {
    return this.pending.size;
  }
  fire(): void {
    const fns = [...this.pending.values()];
    this.pending.clear();
    fns.forEach((fn) => fn());
  }
}

/**
 * A minimal terminal: printable characters, CR, LF, and the escapes the view uses (cursor up,
 * clear line, clear below, cursor show/hide, colours). Returns the screen's lines, trailing
 * spaces trimmed, and where the cursor ended.
 */
function replay(output: string): { screen: string[]; row: number; cursorHidden: boolean } {
  const screen: string[][] = [[]];
  let row = 0;
  let col = 0;
  let cursorHidden = false;
  const line = (r: number) => (screen[r] ??= []);
  for (let i = 0; i < output.length; i++) {
    const ch = output[i] ?? "";
    if (ch === "\x1b") {
      const m = /^\x1b\[(\??)([0-9;]*)([A-Za-z])/.exec(output.slice(i)); // eslint-disable-line no-control-regex
      if (!m) throw new Error(`unexpected escape at ${i}: ${JSON.stringify(output.slice(i, i + 8))}`);
      const [all, priv, arg, cmd] = m;
      const n = Number(arg || "0");
      if (priv && arg === "25") cursorHidden = cmd === "l";
      else if (cmd === "A") row = Math.max(0, row - Math.max(1, n));
      else if (cmd === "K" && n === 2) screen[row] = [];
      else if (cmd === "J") {
        line(row).length = col;
        screen.length = row + 1;
      } else if (cmd !== "m") throw new Error(`escape the model does not know: ${JSON.stringify(all)}`);
      i += all.length - 1;
    } else if (ch === "\r") col = 0;
    else if (ch === "\n") {
      row++;
      col = 0;
      line(row);
    } else {
      const l = line(row);
      while (l.length < col) l.push(" ");
      l[col++] = ch;
    }
  }
  const lines = Array.from({ length: screen.length }, (_, r) => (screen[r] ?? []).join("").trimEnd());
  while (lines.length > 0 && lines[lines.length - 1] === "" && lines.length > row + 1) lines.pop();
  return { screen: lines, row, cursorHidden };
}

describe("local run view (pure, no moto)", () => {
  describe("renderSnapshot", () => {
    const long = snapshot({
      scenario: "a-very-long-scenario-name-that-goes-on-and-on",
      queues: [{ label: "an-extremely-long-queue-label-for-a-gauge-row", visible: 123_456, inFlight: 7_890 }],
      status: ["GPU: starting (boot delay 30 s, instance i-0123456789abcdef0, attempt 3 of 5)"],
    });
    for (const width of [12, 30, 40, 60, 80, 200]) {
      it(`fits every line in ${width} columns, with and without colour`, () => {
        for (const color of [false, true]) {
          const lines = renderSnapshot(long, { width, color });
          for (const l of lines) expect(visible(l).length, JSON.stringify(l)).to.be.at.most(width);
        }
      });
    }

    it("draws a header with the bar and counts, one row per gauge, the counters, then the status", () => {
      const lines = renderSnapshot(snapshot(), { width: 100, color: false });
      expect(lines[0]).to.match(/^▶ ingest-gpu-outage {2}12\.3s {2}\[█+░+\] 40\/120 {2}33%$/);
      expect(lines).to.have.length(6); // header, gauge heading, 2 gauges, counters, 1 status
      expect(lines[2]).to.match(/^ {2}ingest +10 +2 {2}[█▒░]+$/);
      expect(lines[3]).to.match(/^ {2}ingest-dlq +0 +0 {2}░+$/);
      expect(lines[4]).to.equal("  processed 40 · quarantined 0 · in DLQ 0");
      expect(lines[5]).to.equal("  GPU: running (serving)");
    });

    it("aligns the gauge columns under their headings", () => {
      const queues = [
        { label: "a", visible: 1, inFlight: 1 },
        { label: "longer-label", visible: 1000, inFlight: 22 },
      ];
      const [heading = "", ...rows] = renderSnapshot(snapshot({ queues }), { width: 100, color: false }).slice(1, 4);
      const visibleEnd = heading.indexOf("visible") + "visible".length;
      for (const row of rows) {
        const numbers = /^( {2}\S+ +)(\d+)( +)(\d+)/.exec(row);
        expect(numbers, row).not.to.equal(null);
        const [all = "", label = "", vis = ""] = numbers ?? [];
        expect(label.length + vis.length, row).to.equal(visibleEnd);
        expect(all.length, row).to.equal(heading.length); // heading ends with "in flight"
      }
    });

    it("cannot gain lines or escapes from a caller's strings", () => {
      const lines = renderSnapshot(snapshot({ status: ["two\nlines \x1b[31mred\x1b[0m"] }), { width: 80, color: false });
      expect(lines).to.have.length(6);
      expect(lines.join("")).not.to.match(ANSI);
    });

    const colourCases: Array<[string, Partial<LiveSnapshot>, (lines: string[]) => void]> = [
      ["red DLQ gauge when it holds messages", { queues: [{ label: "ingest-dlq", visible: 2, inFlight: 0 }] }, (l) => expect(l[2]).to.include(RED)],
      ["no red DLQ gauge when empty", { queues: [{ label: "ingest-dlq", visible: 0, inFlight: 0 }] }, (l) => expect(l.join("")).not.to.include(RED)],
      ["red lost counter above 0", { counters: { lost: 1 } }, (l) => expect(l[4]).to.include(`${RED}lost 1`)],
      ["red in-DLQ counter above 0", { counters: { "in DLQ": 3 } }, (l) => expect(l[4]).to.include(`${RED}in DLQ 3`)],
      ["green header when done", { progress: { done: 120, total: 120 } }, (l) => expect(l[0]).to.include(GREEN)],
      ["no green header before done", {}, (l) => expect(l[0]).not.to.include(GREEN)],
    ];
    for (const [name, over, check] of colourCases) {
      it(`colour: ${name}`, () => check(renderSnapshot(snapshot(over), { width: 100, color: true })));
    }

    it("has no escapes at all without colour, even in the alarming states", () => {
      const s = snapshot({ progress: { done: 5, total: 5 }, counters: { lost: 2, "in DLQ": 1 }, queues: [{ label: "dlq", visible: 1, inFlight: 0 }] });
      expect(renderSnapshot(s, { width: 100, color: false }).join("\n")).not.to.include("\x1b");
    });
  });

  describe("renderPlainLine", () => {
    it("puts the whole state on one line", () => {
      expect(renderPlainLine(snapshot())).to.equal(
        "[ingest-gpu-outage 12.3s] 40/120 33% | ingest 10/2 ingest-dlq 0/0 | processed 40 quarantined 0 in DLQ 0 | GPU: running (serving)",
      );
    });
    const cases: Array<[string, Partial<LiveSnapshot>, string]> = [
      ["no queues, counters or status", { queues: [], counters: {}, status: [] }, "[ingest-gpu-outage 12.3s] 40/120 33%"],
      ["an unknown total", { progress: { done: 0, total: 0 }, queues: [], counters: {}, status: [] }, "[ingest-gpu-outage 12.3s] 0/0 0%"],
      [
        "several status lines",
        { queues: [], counters: {}, status: ["GPU: stopped", "tasks 2/3"] },
        "[ingest-gpu-outage 12.3s] 40/120 33% | GPU: stopped; tasks 2/3",
      ],
      ["escapes and newlines in inputs", { scenario: "\x1b[1mx\x1b[0m", queues: [], counters: {}, status: ["a\nb"] }, "[x 12.3s] 40/120 33% | a b"],
    ];
    for (const [name, over, expected] of cases) {
      it(`renders ${name} without escapes`, () => {
        const line = renderPlainLine(snapshot(over));
        expect(line).to.equal(expected);
        expect(line).not.to.include("\x1b");
        expect(line).not.to.include("\n");
      });
    }
  });

  describe("LiveView on a TTY", () => {
    function ttyView(opts: { redrawMs?: number; columns?: number; rows?: number } = {}) {
      const stream = new FakeStream();
      stream.columns = opts.columns ?? 100;
      stream.rows = opts.rows;
      const clock = new FakeClock();
      const timers = new FakeTimers();
      const view = new LiveView({ tty: true, stream: stream.asStream(), color: false, redrawMs: opts.redrawMs ?? 100, now: clock.now, timers });
      return { stream, clock, timers, view };
    }

    it("redraws in place: up by the previous block's height, each line cleared", () => {
      const { stream, clock, view } = ttyView();
      view.update(snapshot());
      const first = renderSnapshot(snapshot(), { width: 99, color: false });
      clock.t = 100;
      view.update(snapshot({ elapsedMs: 13_000 }));
      expect(stream.writes).to.have.length(2);
      expect(stream.writes[1]).to.match(new RegExp(`^\\x1b\\[${first.length}A\\r`));
      expect(stream.writes[1]?.match(/\x1b\[2K/g)).to.have.length(first.length); // eslint-disable-line no-control-regex
      expect(replay(stream.text).screen).to.deep.equal(renderSnapshot(snapshot({ elapsedMs: 13_000 }), { width: 99, color: false }).concat(""));
    });

    it("leaves no stale lines when the new block is shorter", () => {
      const { stream, clock, view } = ttyView();
      view.update(snapshot({ status: ["one", "two", "three"] }));
      clock.t = 200;
      const shorter = snapshot({ queues: [], status: [] });
      view.update(shorter);
      const { screen, row } = replay(stream.text);
      const expected = renderSnapshot(shorter, { width: 99, color: false });
      expect(screen).to.deep.equal([...expected, ""]);
      expect(row).to.equal(expected.length); // the cursor sits right below the block
    });

    it("throttles redraws to redrawMs and draws the last snapshot when the timer fires", () => {
      const { stream, clock, timers, view } = ttyView({ redrawMs: 100 });
      view.update(snapshot({ elapsedMs: 1000 }));
      clock.t = 50;
      view.update(snapshot({ elapsedMs: 2000 }));
      view.update(snapshot({ elapsedMs: 3000 }));
      expect(stream.writes).to.have.length(1);
      expect(timers.count).to.equal(1);
      clock.t = 100;
      timers.fire();
      expect(stream.writes).to.have.length(2);
      expect(replay(stream.text).screen[0]).to.include("3.0s");
    });

    it("prints a note above the block and redraws the block below it", () => {
      const { stream, view } = ttyView();
      view.update(snapshot());
      view.note("GPU started i-abc after 3 DLQ messages");
      const block = renderSnapshot(snapshot(), { width: 99, color: false });
      expect(replay(stream.text).screen).to.deep.equal(["GPU started i-abc after 3 DLQ messages", ...block, ""]);
      view.note("second note");
      expect(replay(stream.text).screen).to.deep.equal(["GPU started i-abc after 3 DLQ messages", "second note", ...block, ""]);
    });

    it("hides the cursor while live and shows it again on stop, below the final block", () => {
      const { stream, clock, view } = ttyView();
      view.update(snapshot());
      expect(replay(stream.text).cursorHidden).to.equal(true);
      clock.t = 10; // within the throttle: only stop() draws it
      const final = snapshot({ progress: { done: 120, total: 120 } });
      view.update(final);
      view.stop();
      const { screen, row, cursorHidden } = replay(stream.text);
      expect(cursorHidden).to.equal(false);
      expect(screen.slice(0, -1)).to.deep.equal(renderSnapshot(final, { width: 99, color: false }));
      expect(row).to.equal(screen.length - 1);
    });

    it("keeps lines one column short of the terminal, and the block within its rows", () => {
      const { stream, view } = ttyView({ columns: 40, rows: 4 });
      view.update(snapshot({ scenario: "x".repeat(80), status: ["a", "b", "c"] }));
      const { screen } = replay(stream.text);
      expect(screen.slice(0, -1)).to.have.length(3);
      for (const l of screen) expect(l.length).to.be.at.most(39);
    });

    const colourOpts: Array<[string, boolean | undefined, boolean]> = [
      ["colours by default", undefined, true],
      ["does not colour when color is false", false, false],
    ];
    for (const [name, color, expectColour] of colourOpts) {
      it(`${name}`, () => {
        const stream = new FakeStream();
        const view = new LiveView({ tty: true, stream: stream.asStream(), color, now: () => 0, timers: new FakeTimers() });
        view.update(snapshot({ counters: { lost: 1 } }));
        expect(stream.text.includes(RED)).to.equal(expectColour);
      });
    }
  });

  describe("LiveView in a plain log", () => {
    function plainView(plainEveryMs = 2000, color?: boolean) {
      const stream = new FakeStream();
      const clock = new FakeClock();
      const view = new LiveView({ tty: false, stream: stream.asStream(), plainEveryMs, now: clock.now, color });
      return { stream, clock, view };
    }
    const at = (t: number, done: number, scenario = "s"): [number, LiveSnapshot] => [t, snapshot({ scenario, elapsedMs: t, progress: { done, total: 10 } })];

    const cases: Array<[string, Array<[number, LiveSnapshot]>, number[]]> = [
      ["prints the first update, then at most every plainEveryMs", [at(0, 1), at(500, 2), at(1999, 3), at(2000, 4), at(2100, 5), at(4000, 6)], [0, 2000, 4000]],
      ["prints the moment progress reaches done == total, once", [at(0, 1), at(300, 10), at(400, 10), at(2300, 10)], [0, 300, 2300]],
      ["prints a new scenario's first update at once", [at(0, 1, "a"), at(100, 1, "b"), at(200, 2, "b")], [0, 100]],
      ["prints completion again for the next scenario", [at(0, 10, "a"), at(100, 10, "b")], [0, 100]],
    ];
    for (const [name, updates, printedAt] of cases) {
      it(name, () => {
        const { stream, clock, view } = plainView();
        for (const [t, s] of updates) {
          clock.t = t;
          view.update(s);
        }
        expect(stream.writes).to.deep.equal(printedAt.map((t) => `${renderPlainLine(updates.find(([u]) => u === t)![1])}\n`));
      });
    }

    it("ends the log on the final state at stop, without repeating a line already printed", () => {
      const { stream, clock, view } = plainView();
      view.update(snapshot({ progress: { done: 1, total: 10 } }));
      clock.t = 10;
      view.update(snapshot({ progress: { done: 2, total: 10 } }));
      view.stop();
      view.stop();
      expect(stream.writes).to.have.length(2);
      expect(stream.writes[1]).to.include("2/10");

      const again = plainView();
      again.view.update(snapshot());
      again.view.stop();
      expect(again.stream.writes).to.have.length(1);
    });

    it("never writes an escape, even when colour is asked for", () => {
      const { stream, clock, view } = plainView(0, true);
      view.update(snapshot({ counters: { lost: 3 }, queues: [{ label: "dlq", visible: 4, inFlight: 0 }] }));
      view.note("\x1b[31mGPU started\x1b[0m i-abc");
      clock.t = 1;
      view.update(snapshot({ progress: { done: 120, total: 120 } }));
      view.stop();
      expect(stream.text).not.to.include("\x1b");
      expect(stream.text).to.include("GPU started i-abc\n");
    });
  });

  describe("formatTiming", () => {
    const cases: Array<[Parameters<typeof formatTiming>[0], string]> = [
      [{ wallMs: 2_600, simulatedSeconds: 156 }, "2.6s (156 sim s)"],
      [{ wallMs: 40, simulatedSeconds: 2.4 }, "0.0s (2 sim s)"],
      [{ wallMs: 19_300, simulatedSeconds: 1158 }, "19.3s (1158 sim s)"],
      [null, "—"],
    ];
    for (const [t, text] of cases) {
      it(`shows ${JSON.stringify(t)} as ${text}`, () => expect(formatTiming(t)).to.equal(text));
    }
  });

  describe("renderSummaryTable", () => {
    const rows = [
      summary(),
      summary({
        scenario: "retraining",
        wallMs: 5_000,
        sent: 10,
        processed: 8,
        quarantined: 0,
        inDlq: 0,
        remaining: 1,
        lost: 1,
        timings: {},
        failures: ["expected 9 tasks, saw 8"],
      }),
    ];

    it("shows each row's numbers, its result, and the totals", () => {
      const table = renderSummaryTable(rows, { color: false });
      const line = (name: string) => table.split("\n").find((l) => l.startsWith(`│ ${name} `)) ?? "";
      const cells = (l: string) =>
        l
          .split("│")
          .slice(1, -1)
          .map((c) => c.trim());
      expect(cells(line("ingest-gpu-outage"))).to.deep.equal(["ingest-gpu-outage", "20.1s", "120", "117", "2", "1", "0", "0", "ok"]);
      expect(cells(line("retraining"))).to.deep.equal(["retraining", "5.0s", "10", "8", "0", "0", "1", "1", "FAIL"]);
      expect(cells(line("total"))).to.deep.equal(["total", "25.1s", "130", "125", "2", "1", "1", "1", "FAIL"]);
      expect(cells(table.split("\n")[1] ?? "")).to.deep.equal([
        "scenario",
        "wall",
        "sent",
        "processed",
        "quarantined",
        "in DLQ",
        "remaining",
        "lost",
        "result",
      ]);
    });

    it("keeps every table line the same width", () => {
      const lines = renderSummaryTable(rows, { color: false }).split("\n");
      const tableLines = lines.slice(0, lines.indexOf(""));
      expect(new Set(tableLines.map((l) => [...l].length))).to.have.length(1);
    });

    it("lists timings in wall and simulated seconds (— when null), and failures, under the table", () => {
      const table = renderSummaryTable(rows, { color: false });
      expect(table).to.include("  timings: GPU up → backlog drained 12.3s (741 sim s) · first segments in DLQ —");
      expect(table).to.include("  timings: —");
      expect(table).to.include("    - expected 9 tasks, saw 8");
    });

    it("colours only when asked: red for lost and FAIL, green for ok", () => {
      expect(renderSummaryTable(rows, { color: false })).not.to.include("\x1b");
      const coloured = renderSummaryTable(rows, { color: true });
      expect(coloured).to.include(`${RED}  FAIL`);
      expect(coloured).to.include(`${GREEN}    ok`);
      expect(coloured).to.match(/\x1b\[31m +1\x1b\[0m/); // eslint-disable-line no-control-regex
    });
  });

  describe("summaryDocument", () => {
    const meta = { project: "encache", stack: "dev", speed: 10, wallMs: 31_000 };
    const noAlarms = alarmReport([]);

    it("carries the meta, the rows, their totals and the alarms", () => {
      const rows = [summary(), summary({ scenario: "pool", sent: 5, processed: 4, quarantined: 0, inDlq: 0, remaining: 1, lost: 0 })];
      const alarms = alarmReport([alarmOutcome({ firings: [{ atMs: 750_000, value: 3 }] })], { published: 1 });
      const doc = summaryDocument(meta, rows, alarms);
      expect(doc).to.include(meta);
      expect(doc.scenarios).to.deep.equal(rows);
      expect(doc.totals).to.deep.equal({ sent: 125, processed: 121, quarantined: 2, inDlq: 1, remaining: 1, lost: 0 });
      expect(doc.alarms).to.deep.equal(alarms);
      expect(JSON.parse(JSON.stringify(doc))).to.deep.equal(doc);
    });

    it("stays ok when an alarm fired: scenarios quarantine messages on purpose", () => {
      // Prepare
      const fired = alarmReport([alarmOutcome({ firings: [{ atMs: 750_000, value: 3 }] })]);
      // Act
      const doc = summaryDocument(meta, [summary()], fired);
      // Assess
      expect(doc.ok).to.equal(true);
    });

    const cases: Array<[string, ScenarioSummary[], boolean]> = [
      ["every row clean", [summary(), summary({ scenario: "b" })], true],
      ["no rows", [], true],
      ["a row lost a message", [summary(), summary({ lost: 1 })], false],
      ["a row counted more than it sent", [summary({ lost: -1 })], false],
      ["a row has a failure", [summary({ failures: ["GPU never started"] })], false],
    ];
    for (const [name, rows, ok] of cases) {
      it(`ok is ${ok} when ${name}`, () => expect(summaryDocument(meta, rows, noAlarms).ok).to.equal(ok));
    }
  });

  describe("runTime", () => {
    for (const [ms, text] of [
      [0, "+00:00:00"],
      [750_000, "+00:12:30"],
      [3_599_999, "+00:59:59"],
      [366_100_000, "+101:41:40"],
      [-5, "+00:00:00"],
    ] as const) {
      it(`${ms} ms is ${text}`, () => expect(runTime(ms)).to.equal(text));
    }
  });

  describe("renderAlarmReport", () => {
    const fired = alarmOutcome({ firings: [{ atMs: 750_000, value: 3 }], notified: ["platform-alerts-1234567"] });
    const twice = alarmOutcome({
      alarm: "ingest-quarantine-depth-7654321",
      queue: "ingest-quarantine-1111111",
      statistic: "Average",
      comparisonOperator: "GreaterThanThreshold",
      threshold: 2,
      firings: [
        { atMs: 60_000, value: 2.5, okAtMs: 600_000 },
        { atMs: 3_700_000, value: 12 },
      ],
      notified: ["platform-alerts-1234567"],
      unreachableActions: ["arn:aws:sns:us-east-1:999999999999:elsewhere"],
    });
    const quiet = alarmOutcome({ alarm: "pool-dlq-depth-1" });
    const odd = alarmOutcome({ alarm: "odd-1", unsupported: "statistic p99 is not supported" });
    const lines = (report: AlarmReport) => renderAlarmReport(report, { color: false }).split("\n");
    const row = (text: string, alarm: string) => text.split("\n").filter((l) => l.trimStart().startsWith(alarm));

    const cases: Array<{ title: string; report: AlarmReport; expected: string[] }> = [
      {
        title: "one row per firing: alarm, queue, time since the start, value against threshold, topics, return to OK",
        report: alarmReport([fired, twice, quiet], { published: 4 }),
        expected: [
          "ingest-dlq-depth-abc1234  ingest-dlq-9f8e7d6  +00:12:30  Maximum 3 ≥ 1  platform-alerts-1234567  still in ALARM",
          "ingest-quarantine-depth-7654321  ingest-quarantine-1111111  +00:01:00  Average 2.50 > 2  platform-alerts-1234567 (+1 action outside moto, not published)  +00:10:00",
          "ingest-quarantine-depth-7654321  ingest-quarantine-1111111  +01:01:40  Average 12 > 2  platform-alerts-1234567 (+1 action outside moto, not published)  still in ALARM",
          "1 alarm stayed OK · 2 alarms fired · 4 messages published to topics in moto · 120 samples (one round per simulated minute)",
        ],
      },
      {
        title: "none fired, one not evaluated, a coarser sampling",
        report: alarmReport([quiet, odd], { samples: 1, sampleEverySimMs: 720_000 }),
        expected: [
          "no alarm would have fired",
          "1 alarm stayed OK · 0 alarms fired · 0 messages published to topics in moto · 1 sample (one round per 12 simulated minutes)",
          "not evaluated: odd-1: statistic p99 is not supported",
        ],
      },
    ];
    for (const c of cases) {
      it(c.title, () => {
        // Act
        const out = lines(c.report).map((l) => l.trim().replace(/ {2,}/g, "  "));
        // Assess
        expect(out[0]).to.equal("alarms (computed from the run's metric samples; moto evaluates none)");
        for (const e of c.expected) expect(out).to.include(e);
      });
    }

    it("lines the rows up under the header", () => {
      // Act
      const text = renderAlarmReport(alarmReport([fired, twice]), { color: false });
      // Assess
      const header = text.split("\n")[1] ?? "";
      for (const l of [...row(text, "ingest-dlq"), ...row(text, "ingest-quarantine")]) {
        expect(l.indexOf("+0"), l).to.equal(header.indexOf("at"));
      }
    });

    it("colours the fired rows only when asked, and strips escapes from names", () => {
      // Prepare
      const hostile = alarmOutcome({ alarm: "evil\x1b[2Jname", firings: [{ atMs: 0, value: 1 }] });
      // Act
      const plain = renderAlarmReport(alarmReport([hostile]), { color: false });
      const coloured = renderAlarmReport(alarmReport([fired]), { color: true });
      // Assess
      expect(plain).not.to.include("\x1b");
      expect(plain).to.include("evilname");
      expect(coloured).to.include("\x1b[33m  ingest-dlq-depth-abc1234");
    });
  });
});
