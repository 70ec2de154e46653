/**
 * The HTML report (local/show/report.ts, local/observe/report-recorder.ts, local/show/report-page.js): the data cut
 * into one timeline per scenario, the page as text, and the page in a real headless Chromium,
 * whose DOM and screenshot show that every chart drew its series. A small synthetic run
 * (fixtures/report-input.ts), so no platform is started.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { PNG } from "pngjs";
import type { DepthListener, DepthRound } from "../../../local/observe/depth-sampler";
import type { GpuServiceState } from "../../../local/hosts/gpu-host";
import { buildReportData, loadChartAssets, queueKind, renderReport, type ReportData } from "../../../local/show/report";
import { RunRecorder } from "../../../local/observe/report-recorder";
import { findChromium, headless } from "../helpers/chromium";
import { QUEUES, reportInput, T0 } from "../fixtures/report-input";

describe("HTML report", () => {
  describe("buildReportData", () => {
    const data = buildReportData(reportInput());
    const [outage, retraining] = data.scenarios;

    it("gives each scenario the samples of its own window, in simulated seconds since it started", () => {
      expect(data.scenarios.map((s) => s.name)).to.deep.equal(["ingest-gpu-outage", "retraining"]);
      // 0–20 s real every 500 ms at speed 60: 41 samples, 0 to 1200 simulated seconds.
      expect(outage?.t).to.have.length(41);
      expect(outage?.t[0]).to.equal(0);
      expect(outage?.t.at(-1)).to.equal(1200);
      expect(outage?.durationS).to.equal(1200);
      expect(retraining?.t[0]).to.equal(0);
      expect(retraining?.durationS).to.equal(600);
    });

    it("charts the scenario's own queues and those of its part that moved, sources and its own first; other parts' busy queues are not", () => {
      expect(outage?.queues.map((q) => [q.label, q.kind])).to.deep.equal([
        ["ingest", "source"],
        ["ingest-gpu-idle", "source"],
        ["ingest-dlq", "dlq"],
        ["ingest-quarantine", "quarantine"],
      ]);
      // ingest-quarantine still holds outage's message, flat at 1: not retraining's. Its own DLQ is charted though flat.
      expect(retraining?.queues.map((q) => q.label)).to.deep.equal(["retraining", "retraining-dlq"]);
      expect(retraining?.queues[0]?.values.slice(0, 3)).to.deep.equal([7, 6, 6]);
    });

    it("shows the GPU and the tasks only where they moved, and counts deliveries from the scenario's start", () => {
      expect(outage?.activity.map((a) => a.label)).to.deep.equal(["GPU", "delivered to GPU"]);
      const phase = outage?.activity[0]?.values ?? [];
      expect([phase[0], phase[18], phase[30]]).to.deep.equal([0, 1, 2]);
      expect(outage?.activity[1]?.values.at(-1)).to.equal(12);
      // Retraining: the GPU served throughout and received nothing new.
      expect(retraining?.activity.map((a) => a.label)).to.deep.equal(["ECS tasks running"]);
    });

    it("marks each key timing with a number at its end, shaded from its start; a timing that never happened is listed unnumbered", () => {
      expect(outage?.marks.filter((m) => m.kind === "timing")).to.deep.equal([
        { kind: "timing", label: "1", atS: 210, fromS: 30 },
        { kind: "timing", label: "2", atS: 690, fromS: 30 },
        { kind: "timing", label: "3", atS: 960, fromS: 690 },
      ]);
      expect(outage?.timings.map((t) => [t.n, t.name])).to.deep.equal([
        [1, "first segments in DLQ"],
        [2, "GPU serving"],
        [3, "GPU up → backlog drained"],
        [undefined, "never happened"],
      ]);
    });

    it("marks the GPU's starts and the alarms inside the window, alarm times converted from simulated time", () => {
      expect(outage?.marks.filter((m) => m.kind !== "timing")).to.deep.equal([
        { kind: "gpu", label: "GPU started", atS: 480 },
        { kind: "gpu", label: "GPU serving", atS: 690 },
        // 120 simulated seconds after the clock's start is 2 s real, 120 simulated seconds into the first window.
        { kind: "alarm", label: "ALARM ingest-quarantine-depth", atS: 120 },
      ]);
      expect(retraining?.marks.map((m) => m.kind)).to.deep.equal(["timing"]);
    });

    it("lists the alarms in run time, and is not ok when a scenario lost a message", () => {
      expect(data.alarms).to.deep.equal([{ alarm: "ingest-quarantine-depth", queue: "ingest-quarantine-abc1234", at: "+00:02:00", value: 1, threshold: 1 }]);
      expect(data.ok).to.equal(false);
      expect(JSON.parse(JSON.stringify(data))).to.deep.equal(data);
    });

    it("leaves out a row with no recorded window", () => {
      // Prepare
      const input = reportInput();
      input.recorded.windows = input.recorded.windows.filter((w) => w.name !== "retraining");
      // Act
      const cut = buildReportData(input);
      // Assess
      expect(cut.scenarios.map((s) => s.name)).to.deep.equal(["ingest-gpu-outage"]);
    });

    it("takes a queue's kind from its role tag, else its name", () => {
      expect(queueKind({ logicalName: "x", role: "dlq" })).to.equal("dlq");
      expect(queueKind({ logicalName: "pool-refill-dlq" })).to.equal("dlq");
      expect(queueKind({ logicalName: "ingest-quarantine" })).to.equal("quarantine");
      expect(queueKind({ logicalName: "ingest", role: "source" })).to.equal("source");
    });
  });

  describe("renderReport", () => {
    const assets = loadChartAssets();
    const html = renderReport(buildReportData(reportInput()), assets);

    it("inlines uPlot, its style and the page's script, and fetches nothing", () => {
      expect(html).to.include(assets.chartJs);
      expect(html).to.include(assets.chartCss);
      expect(html).to.include(assets.pageJs);
      expect(assets.chartJs).to.match(/^\/\*! https:\/\/github\.com\/leeoniya\/uPlot \(v1\./);
      expect(html).not.to.match(/<script[^>]+src=|<link[^>]+href=|@import|url\(\s*['"]?https?:/i);
    });

    it("has one section per scenario with a container for each of its charts", () => {
      expect(html.match(/<section class="scenario"/g)).to.have.length(2);
      expect(html).to.include('data-scenario="ingest-gpu-outage"');
      expect(html).to.include('data-scenario="retraining"');
      expect(html.match(/<div class="chart"/g)).to.have.length(4);
      expect(html).to.include("GPU up → backlog drained <b>4.5s (270 sim s)</b>");
    });

    it("escapes the run's text, in the page and in the embedded data", () => {
      // Three script elements (data, uPlot, page): the failure's "</script>" closes none of them.
      expect(html.match(/<\/script>/g)).to.have.length(3);
      expect(html).to.include("expected 6 tasks, saw 5 &lt;script&gt;alert(1)&lt;/script&gt;");
      const json = /<script type="application\/json" id="report-data">(.*?)<\/script>/s.exec(html)?.[1] ?? "";
      expect((JSON.parse(json) as ReportData).scenarios[1]?.summary.failures[0]).to.equal("expected 6 tasks, saw 5 <script>alert(1)</script>");
    });

    it("refuses to inline code that would end its element early", () => {
      expect(() => renderReport(buildReportData(reportInput()), { ...assets, pageJs: 'x = "</script>";' })).to.throw(
        /cannot inline code that contains <\/script/,
      );
    });

    it("is the same page for the same data", () => {
      expect(renderReport(buildReportData(reportInput()), assets)).to.equal(html);
    });
  });

  describe("RunRecorder", () => {
    it("records each round's depths by logical name, the GPU's phase and deliveries, its starts and stops, and the windows", async () => {
      // Prepare: a fake sampler and GPU; the GPU stops, starts, then serves.
      const listeners: DepthListener[] = [];
      const depths = { everyRealMs: 500, subscribe: (l: DepthListener) => addListener(listeners, l) };
      let gpu: GpuServiceState = { instanceState: "running", serving: true, runningSinceMs: T0 - 60_000, servingSinceMs: T0 - 50_000, starts: 1 };
      let received = 3;
      const recorder = new RunRecorder({ queues: QUEUES, depths, gpu: { state: () => gpu, received: () => new Array<unknown>(received) }, tasks: () => [] });
      recorder.start();
      const ingest = QUEUES.find((q) => q.logicalName === "ingest")?.name ?? "";
      const round = async (index: number, visible: number) => {
        const r: DepthRound = { index, realTimeMs: T0 + index * 500, simTimeMs: 0, depths: new Map([[ingest, { visible, inFlight: 1, delayed: 0 }]]) };
        for (const l of listeners) await l(r);
      };

      // Act
      recorder.scenarioStarted({ name: "outage", title: "t", queues: ["ingest"] }, T0);
      await round(0, 5);
      gpu = { ...gpu, instanceState: "stopped", serving: false, runningSinceMs: null, servingSinceMs: null };
      await round(1, 6);
      gpu = { ...gpu, instanceState: "running", runningSinceMs: T0 + 1_200, starts: 2 };
      await round(3, 2);
      gpu = { ...gpu, serving: true, servingSinceMs: T0 + 1_700 };
      received = 9;
      await round(4, 0);
      recorder.scenarioEnded("outage", T0 + 2_000);
      const { samples, events, windows } = recorder.recorded();

      // Assess
      expect(samples.map((s) => [s.depths.ingest, s.gpu?.phase, s.gpu?.delivered])).to.deep.equal([
        [6, "serving", 3],
        [7, "stopped", 3],
        [3, "booting", 3],
        [1, "serving", 9],
      ]);
      expect(events).to.deep.equal([
        { realTimeMs: T0 + 500, label: "GPU stopped" },
        { realTimeMs: T0 + 1_200, label: "GPU started" },
        { realTimeMs: T0 + 1_700, label: "GPU serving" },
      ]);
      expect(windows).to.deep.equal([{ name: "outage", title: "t", queues: ["ingest"], startMs: T0, endMs: T0 + 2_000 }]);
    });
  });

  describe("findChromium", () => {
    it("takes CHROMIUM_PATH when it is an executable", () => {
      expect(findChromium({ CHROMIUM_PATH: process.execPath, PATH: "" })).to.equal(process.execPath);
    });

    it("says how to get a browser when there is none, rather than letting the test skip", () => {
      expect(() => findChromium({ PATH: "" })).to.throw(/set CHROMIUM_PATH .*apt-get install -y chromium/);
      expect(() => findChromium({ CHROMIUM_PATH: "/nonexistent/chromium", PATH: "" })).to.throw(
        /CHROMIUM_PATH=\/nonexistent\/chromium is not an executable file/,
      );
    });
  });

  describe("in headless Chromium", function () {
    // Two browser launches; a cold one on a busy CI machine takes seconds.
    this.timeout(120_000);
    const WIDTH = 1200;
    const HEIGHT = 2000;
    let dir: string;
    let file: string;
    let browser: string;
    const data = buildReportData(reportInput());

    before(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "report-test-"));
      file = path.join(dir, "report.html");
      fs.writeFileSync(file, renderReport(data));
    });

    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    beforeEach(() => {
      // Throws without a browser, saying how to get one: the test fails, never skips.
      browser = findChromium();
    });

    it("draws every chart with its series and marks, without a script error", () => {
      // Act
      const dom = headless(browser, file, [`--window-size=${WIDTH},${HEIGHT}`, "--dump-dom"]);

      // Assess
      const body = /<body([^>]*)>/.exec(dom)?.[1] ?? "";
      expect(body, "the page's script reported an error").not.to.include("data-chart-error");
      expect(body).to.include('data-charts-drawn="4"');
      expect(dom).to.include("<title>encache local run · dev (4 charts drawn)</title>");
      const charts = [...dom.matchAll(/<div class="chart"([^>]*)>/g)].map((m) => attributes(m[1] ?? ""));
      expect(charts.map((c) => [c["data-chart"], c["data-drawn"], c["data-series"], c["data-points"]])).to.deep.equal([
        ["queues", "1", "4", "41"],
        ["activity", "1", "2", "41"],
        ["queues", "1", "2", "21"],
        ["activity", "1", "1", "21"],
      ]);
      expect(charts[0]?.["data-marks"]).to.equal(String(data.scenarios[0]?.marks.length));
      expect(dom.match(/<canvas/g)?.length).to.be.at.least(4);
    });

    it("paints the series into the plot areas: a screenshot shows each series' colour there", () => {
      // Prepare: where the plot areas are, at the screenshot's window size.
      const dom = headless(browser, file, [`--window-size=${WIDTH},${HEIGHT}`, "--dump-dom"]);
      const rects = [...dom.matchAll(/data-plot-rect="(\d+),(\d+),(\d+),(\d+)"/g)].map((m) => m.slice(1, 5).map(Number) as [number, number, number, number]);
      expect(rects).to.have.length(4);

      // Act
      const png = path.join(dir, "report.png");
      headless(browser, file, [`--window-size=${WIDTH},${HEIGHT}`, `--screenshot=${png}`]);
      const image = PNG.sync.read(fs.readFileSync(png));

      // Assess: the first chart holds ingest (blue) and ingest-dlq (red) lines over a mostly white plot.
      expect([image.width, image.height]).to.deep.equal([WIDTH, HEIGHT]);
      const [x, y, w, h] = rects[0] ?? [0, 0, 0, 0];
      expect(w * h, "the first plot area is not on the screenshot").to.be.above(10_000);
      expect(y + h).to.be.at.most(HEIGHT);
      const plot = pixels(image, x, y, w, h);
      const ink = plot.filter(([r, g, b]) => r < 235 || g < 235 || b < 235).length;
      expect(ink / plot.length, "too little drawn in the plot area").to.be.above(0.02);
      expect(near(plot, [0x09, 0x69, 0xda]), "ingest's blue line").to.be.above(100);
      expect(near(plot, [0xcf, 0x22, 0x2e]), "ingest-dlq's red line").to.be.above(100);
      expect(new Set(plot.map(([r, g, b]) => `${r >> 4},${g >> 4},${b >> 4}`)).size, "distinct colours").to.be.above(8);
      // The activity chart: the GPU's green phase line.
      const [ax, ay, aw, ah] = rects[1] ?? [0, 0, 0, 0];
      expect(near(pixels(image, ax, ay, aw, ah), [0x1a, 0x7f, 0x37]), "the GPU's green line").to.be.above(50);
    });
  });
});

function addListener(listeners: DepthListener[], l: DepthListener): () => void {
  listeners.push(l);
  return () => listeners.splice(listeners.indexOf(l), 1);
}

function attributes(text: string): Record<string, string> {
  return Object.fromEntries([...text.matchAll(/([\w-]+)="([^"]*)"/g)].map((m) => [m[1] ?? "", m[2] ?? ""]));
}

/** The RGB of every pixel in a rectangle of the screenshot. */
function pixels(image: PNG, x: number, y: number, w: number, h: number): Array<[number, number, number]> {
  const out: Array<[number, number, number]> = [];
  for (let row = y; row < Math.min(image.height, y + h); row++) {
    for (let col = x; col < Math.min(image.width, x + w); col++) {
      const i = (row * image.width + col) * 4;
      out.push([image.data[i] ?? 0, image.data[i + 1] ?? 0, image.data[i + 2] ?? 0]);
    }
  }
  return out;
}

/** How many pixels are within a small distance of a colour (anti-aliasing blurs a line's edges). */
function near(plot: Array<[number, number, number]>, [r, g, b]: [number, number, number]): number {
  return plot.filter(([pr, pg, pb]) => Math.abs(pr - r) + Math.abs(pg - g) + Math.abs(pb - b) < 60).length;
}
