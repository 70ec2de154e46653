/**
 * The terminal output of the local run (`npm start`) while it runs: a live block redrawn in place on
 * a TTY, one self-contained line per tick in a plain log (`--no-tty`, CI, pipes); and the types the
 * scenarios report in. The end-of-run summary table and the `--json` document are summary.ts.
 *
 * Rendering is pure (snapshot in, lines out) so it is tested without a terminal; LiveView only
 * decides *when* to write and how to overwrite the previous block.
 */
import { clean, ESCAPES, fit, padEnd, padStart, paint, type Seg, seconds, widthOf } from "./text";

/**
 * One key timing of a scenario. The run's clock goes `--speed` times faster than the wall, so
 * a duration a person waited for and the duration the platform lived through differ: both are
 * given (built with `timing()` or `keyTimings()` of local/scenarios/scenario.ts).
 */
export interface Timing {
  wallMs: number;
  simulatedSeconds: number;
}

/** The real instants (epoch ms) a key timing runs between. */
export interface TimingMark {
  fromMs: number;
  toMs: number;
}

/** Where every message sent ended up: the counts a scenario and the chaos run both account for. */
export interface MessageCounts {
  /** Messages put on a queue. */
  sent: number;
  /** Messages whose effect was observed (GPU received it, task launched, job completed…). */
  processed: number;
  /** Messages moved to a quarantine queue with a reason. */
  quarantined: number;
  /** Messages sitting in a DLQ at the end. */
  inDlq: number;
  /** Messages still on their source queue at the end (visible or in flight). */
  remaining: number;
  /** sent − processed − quarantined − inDlq − remaining: must be 0. */
  lost: number;
}

/** One row of the end-of-run table, and one entry of `--json`'s `scenarios`. */
export interface ScenarioSummary extends MessageCounts {
  scenario: string;
  wallMs: number;
  /** Key timings, in wall time and in simulated time (null when the event never happened). */
  timings: Record<string, Timing | null>;
  /**
   * When each key timing's interval began and ended, for the HTML report's timeline; a timing
   * without a mark is listed there but not drawn. Absent when the scenario marks none.
   */
  marks?: Record<string, TimingMark>;
  /** Scenario-specific counts (tasks launched, duplicates, claims…). */
  details: Record<string, unknown>;
  /** Expectations the scenario checked that did not hold (empty when it passed). */
  failures: string[];
}

/** One gauge row of the live view. */
export interface QueueGauge {
  /** Short label, e.g. `ingest` or `ingest-dlq`. */
  label: string;
  visible: number;
  inFlight: number;
}

/** What the live view draws on each tick. */
export interface LiveSnapshot {
  scenario: string;
  elapsedMs: number;
  progress: { done: number; total: number };
  queues: QueueGauge[];
  /** Counters shown under the gauges, e.g. processed, quarantined, in DLQ. */
  counters: Record<string, number>;
  /** Free-form status lines, e.g. `GPU: running (serving)`. */
  status: string[];
}

function percent(done: number, total: number): number {
  // Floor, so 100% appears only when everything is done.
  return total > 0 ? Math.max(0, Math.min(100, Math.floor((done * 100) / total))) : 0;
}

function isDone(s: LiveSnapshot): boolean {
  return s.progress.total > 0 && s.progress.done >= s.progress.total;
}

/** A gauge or counter about dead letters or lost messages: non-zero means something went wrong. */
function isAlarming(label: string): boolean {
  return /dlq|dead|lost/i.test(label);
}

function bar(filled: number, cells: number): string {
  const n = Math.max(0, Math.min(cells, Math.round(filled * cells)));
  return "█".repeat(n) + "░".repeat(cells - n);
}

// ---------------------------------------------------------------------------------------------
// The live block

/** Bar width for a line whose other parts take `used` columns: shrinks to fit, vanishes below 4. */
function barCells(width: number, used: number, max: number): number {
  const cells = Math.min(max, width - used);
  return cells >= 4 ? cells : 0;
}

function headerLine(s: LiveSnapshot, width: number): Seg[] {
  const { done, total } = s.progress;
  const done_ = isDone(s);
  const elapsed = `  ${seconds(s.elapsedMs)}  `;
  const tail: Seg[] = [{ text: ` ${done}/${total}  ${percent(done, total)}%`, style: done_ ? "green" : undefined }];
  // On a narrow terminal the progress counts matter more than the whole name, and the name more
  // than the bar: shorten the name (not below 8 columns), then give the bar what is left.
  const fixed = widthOf("▶ ") + widthOf(elapsed) + widthOf(tail[0]?.text ?? "");
  const name = paint(fit([{ text: clean(s.scenario) }], Math.max(8, width - fixed)), false);
  const used = fixed + widthOf(name) + 2; // + the bar's brackets
  const cells = barCells(width, used, 30);
  const fill = total > 0 ? done / total : 0;
  const barSegs: Seg[] = cells > 0 ? [{ text: "[" }, { text: bar(fill, cells), style: done_ ? "green" : undefined }, { text: "]" }] : [];
  return [{ text: "▶ " }, { text: name, style: "bold" }, { text: elapsed }, ...barSegs, ...tail];
}

/** The gauge bar: visible messages as █, in-flight ones as ▒, scaled to the run's total. */
function gaugeBar(q: QueueGauge, scale: number, cells: number): string {
  if (cells <= 0) return "";
  const cellsFor = (n: number) => (n > 0 ? Math.max(1, Math.round((n / scale) * cells)) : 0);
  const visible = Math.min(cells, cellsFor(q.visible));
  const inFlight = Math.min(cells - visible, cellsFor(q.inFlight));
  return "█".repeat(visible) + "▒".repeat(inFlight) + "░".repeat(cells - visible - inFlight);
}

function gaugeLines(s: LiveSnapshot, width: number): Seg[][] {
  if (s.queues.length === 0) return [];
  const labels = s.queues.map((q) => clean(q.label));
  const labelW = Math.max(5, ...labels.map(widthOf));
  const visW = Math.max(7, ...s.queues.map((q) => String(q.visible).length));
  const flightW = Math.max(9, ...s.queues.map((q) => String(q.inFlight).length));
  // Scale bars to the larger of the run's total and the deepest queue, so a draining queue's bar
  // shrinks over the run instead of always filling the line.
  const scale = Math.max(1, s.progress.total, ...s.queues.map((q) => q.visible + q.inFlight));
  const prefix = 2 + labelW + 2 + visW + 2 + flightW + 2;
  const cells = barCells(width, prefix, 20);
  const header: Seg[] = [{ text: `  ${padEnd("queue", labelW)}  ${padStart("visible", visW)}  ${padStart("in flight", flightW)}`, style: "dim" }];
  const rows = s.queues.map((q, i): Seg[] => {
    const alarm = isAlarming(q.label) && q.visible + q.inFlight > 0;
    const text = `  ${padEnd(labels[i] ?? "", labelW)}  ${padStart(String(q.visible), visW)}  ${padStart(String(q.inFlight), flightW)}`;
    const gauge = gaugeBar(q, scale, cells);
    return [
      { text, style: alarm ? "red" : undefined },
      { text: gauge ? `  ${gauge}` : "", style: alarm ? "red" : undefined },
    ];
  });
  return [header, ...rows];
}

function counterLine(s: LiveSnapshot): Seg[] {
  const entries = Object.entries(s.counters);
  if (entries.length === 0) return [];
  const segs: Seg[] = [{ text: "  " }];
  entries.forEach(([key, value], i) => {
    if (i > 0) segs.push({ text: " · " });
    segs.push({ text: `${clean(key)} ${value}`, style: isAlarming(key) && value > 0 ? "red" : undefined });
  });
  return segs;
}

/**
 * The live block for a TTY: header with progress bar, one row per queue gauge, the counters, then
 * the status lines. Every line fits `width` columns (truncated with …, never wrapped) and carries
 * ANSI colours only when `opts.color`.
 */
export function renderSnapshot(s: LiveSnapshot, opts: { width: number; color: boolean }): string[] {
  const width = Math.max(1, Math.floor(opts.width));
  const lines: Seg[][] = [headerLine(s, width), ...gaugeLines(s, width)];
  const counters = counterLine(s);
  if (counters.length > 0) lines.push(counters);
  for (const status of s.status) lines.push([{ text: `  ${clean(status)}` }]);
  return lines.map((segs) => paint(fit(segs, width), opts.color));
}

/**
 * One self-contained line for plain logs, e.g.
 * `[ingest-gpu-outage 12.3s] 40/120 33% | ingest 10/2 ingest-dlq 0/0 | processed 40 dlq 0 | GPU: running`.
 * Never contains an escape, whatever the inputs hold.
 */
export function renderPlainLine(s: LiveSnapshot): string {
  const { done, total } = s.progress;
  const parts = [`[${clean(s.scenario)} ${seconds(s.elapsedMs)}] ${done}/${total} ${percent(done, total)}%`];
  if (s.queues.length > 0) parts.push(s.queues.map((q) => `${clean(q.label)} ${q.visible}/${q.inFlight}`).join(" "));
  const counters = Object.entries(s.counters);
  if (counters.length > 0) parts.push(counters.map(([k, v]) => `${clean(k)} ${v}`).join(" "));
  if (s.status.length > 0) parts.push(s.status.map(clean).join("; "));
  return parts.join(" | ");
}

// ---------------------------------------------------------------------------------------------
// LiveView: when to write, and how to overwrite

const CURSOR_UP = (n: number) => `\x1b[${n}A`;
const CLEAR_LINE = "\x1b[2K";
const CLEAR_BELOW = "\x1b[J";
const HIDE_CURSOR = "\x1b[?25l";
const SHOW_CURSOR = "\x1b[?25h";

/** Timer functions, injectable so tests drive the trailing redraw without real time. */
export interface ViewTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: ViewTimers = {
  set: (fn, ms) => {
    const t = setTimeout(fn, ms);
    // A pending redraw must not keep the process alive after the run is over.
    t.unref();
    return t;
  },
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface LiveViewOptions {
  tty: boolean;
  stream: NodeJS.WritableStream;
  /** Defaults to `tty`. Plain output never has colour. */
  color?: boolean;
  redrawMs?: number;
  plainEveryMs?: number;
  now?: () => number;
  /** Terminal width; defaults to the stream's `columns`, else 80. */
  width?: () => number;
  /** Defaults to setTimeout/clearTimeout (unref'd). */
  timers?: ViewTimers;
}

export class LiveView {
  /** The options with their defaults. */
  private readonly opts: Required<LiveViewOptions>;

  private latest?: LiveSnapshot;
  /** Lines of the block currently on screen (TTY), i.e. how far up the next redraw moves. */
  private height = 0;
  private lastDrawAt = -Infinity;
  private pending?: unknown;
  private cursorHidden = false;
  /** Plain mode: the last line written, when, and for which scenario. */
  private lastPlain?: { line: string; at: number; scenario: string };
  /** Plain mode: whether the previous update was complete, so completion is logged once. */
  private plainWasDone = false;
  private stopped = false;

  constructor(opts: LiveViewOptions) {
    const columns = (opts.stream as { columns?: unknown }).columns;
    this.opts = {
      tty: opts.tty,
      stream: opts.stream,
      color: opts.tty && (opts.color ?? true),
      redrawMs: opts.redrawMs ?? 100,
      plainEveryMs: opts.plainEveryMs ?? 2000,
      now: opts.now ?? Date.now,
      width: opts.width ?? (() => (typeof columns === "number" && columns > 0 ? columns : 80)),
      timers: opts.timers ?? realTimers,
    };
  }

  /** Remembers the snapshot and draws it, throttled (TTY) or as a periodic log line (plain). */
  update(s: LiveSnapshot): void {
    if (this.stopped) return;
    this.latest = s;
    if (this.opts.tty) this.updateTty();
    else this.updatePlain(s);
  }

  /** A log line: above the live block on a TTY (the block is redrawn below it), as is otherwise. */
  note(line: string): void {
    if (!this.opts.tty || this.stopped) {
      // Plain logs stay free of escapes even when a caller passes a coloured line.
      this.opts.stream.write(`${line.replace(ESCAPES, "")}\n`);
      return;
    }
    this.draw(`${line}\n`);
  }

  /** Draws the latest state one last time and leaves the cursor below it, visible. */
  stop(): void {
    if (this.stopped) return;
    this.cancelPending();
    if (this.opts.tty) {
      if (this.latest) this.draw("");
      if (this.cursorHidden) this.opts.stream.write(SHOW_CURSOR);
      this.cursorHidden = false;
    } else if (this.latest) {
      // The log ends on the final state, unless that exact line was the last one written.
      const line = renderPlainLine(this.latest);
      if (line !== this.lastPlain?.line) this.opts.stream.write(`${line}\n`);
    }
    this.stopped = true;
  }

  private updateTty(): void {
    const wait = this.lastDrawAt + this.opts.redrawMs - this.opts.now();
    if (wait <= 0) {
      this.draw("");
    } else if (this.pending === undefined) {
      // Trailing redraw: a burst of updates followed by silence must still show the last one.
      this.pending = this.opts.timers.set(() => {
        this.pending = undefined;
        if (!this.stopped) this.draw("");
      }, wait);
    }
  }

  private updatePlain(s: LiveSnapshot): void {
    const now = this.opts.now();
    const prev = this.lastPlain;
    const done = isDone(s);
    // A new scenario's first line and the moment a scenario completes are always logged.
    const sameScenario = prev !== undefined && prev.scenario === s.scenario;
    const justDone = done && !(sameScenario && this.plainWasDone);
    this.plainWasDone = done;
    if (sameScenario && !justDone && now - prev.at < this.opts.plainEveryMs) return;
    const line = renderPlainLine(s);
    this.opts.stream.write(`${line}\n`);
    this.lastPlain = { line, at: now, scenario: s.scenario };
  }

  /**
   * Overwrites the block in one write: up by the old height, `before` (note lines) and the new
   * block, each line cleared first, then everything below cleared, so a shorter block leaves no
   * stale lines. Lines are one column short of the width: a line filling the last column makes
   * some terminals wrap early, and the next move up would then fall one line short.
   */
  private draw(before: string): void {
    this.cancelPending();
    let lines = this.latest ? renderSnapshot(this.latest, { width: Math.max(1, this.opts.width() - 1), color: this.opts.color }) : [];
    // A block taller than the screen scrolls its top away, and moving up could not reach it again.
    const rows = (this.opts.stream as { rows?: unknown }).rows;
    if (typeof rows === "number" && rows > 1 && lines.length > rows - 1) lines = lines.slice(0, rows - 1);
    let out = "";
    if (!this.cursorHidden && lines.length > 0) {
      out += HIDE_CURSOR;
      this.cursorHidden = true;
    }
    if (this.height > 0) out += `${CURSOR_UP(this.height)}\r`;
    for (const noteLine of before.split("\n").slice(0, -1)) out += `${CLEAR_LINE}${noteLine}\n`;
    for (const line of lines) out += `${CLEAR_LINE}${line}\n`;
    out += CLEAR_BELOW;
    this.opts.stream.write(out);
    this.height = lines.length;
    this.lastDrawAt = this.opts.now();
  }

  private cancelPending(): void {
    if (this.pending !== undefined) this.opts.timers.clear(this.pending);
    this.pending = undefined;
  }
}
