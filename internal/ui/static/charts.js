// charts.js: the dashboard's charts, drawn by uPlot (third_party/uplot, a
// copy of the pinned npm package). A Chart is a time series line chart
// that fills its container's width and follows it when it resizes (a
// phone turned sideways), or a fixed-size sparkline. Its colours are the
// stylesheet's --chart-* properties, read again and the chart drawn anew
// when the system switches between light and dark mode. Times on its axis
// are local. The chart is a picture only: whoever uses one gives it a
// text alternative (role img and a label, or a table).
//
// The browser test reads what a chart drew from its element: the element
// holds its uPlot instance as el.uplot (data, series, canvas).

import uPlot from "./third_party/uplot/uPlot.esm.js";
import { h } from "./dom.js";
import { msText } from "./stats.js";

/** The charts drawn now, restyled when the colour scheme changes. */
const drawn = new Set();

matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
  for (const chart of [...drawn]) { // redraw() takes each out of the set and puts it back
    chart.redraw();
  }
});

/** A custom property of the page's stylesheet, for the colour scheme shown. */
function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

/** A "#rrggbb" colour at a fifth of its strength, to fill under a sparkline. */
function translucent(colour) {
  return /^#[0-9a-f]{6}$/i.test(colour) ? `${colour}33` : "transparent";
}

/** Tick steps of the y axes: whole numbers only (jobs, or ms). */
const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8];

/** The y axis's width: its longest label's ("150 ms"), so that none is cut off. */
function fitLabels(u, values, i, cycle) {
  const axis = u.axes[i];
  if (cycle > 1) {
    return axis._size;
  }
  const longest = (values || []).reduce((a, v) => (v.length > a.length ? v : a), "");
  u.ctx.font = axis.font[0];
  return Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / devicePixelRatio);
}

/** The y range of a chart: from 0 to a round number above the highest value (1 when all are 0). */
function fromZero(u, min, max) {
  return uPlot.rangeNum(0, max > 0 ? max : 1, 0.1, true);
}

/**
 * A chart. spec: {series: [{label, colour: "--chart-…", dash?}], unit:
 * "count" or "ms", height (px), spark (true for a sparkline: no axes, no
 * legend, no cursor, width fixed)}. set(data) draws data, uPlot's columns:
 * [unix seconds, ...one array per series].
 */
export class Chart {
  constructor(spec) {
    this.spec = spec;
    this.el = h("div", { class: spec.spark ? "spark-line" : "plot" });
    this.data = null;
    this.plot = null;
    if (!spec.spark) {
      this.resizes = new ResizeObserver(() => this.fit());
      this.resizes.observe(this.el);
    }
  }

  /** Draws data, making the plot the first time its element has a width; null clears it. */
  set(data) {
    this.data = data;
    if (!data) {
      this.drop();
      return;
    }
    if (this.plot) {
      this.plot.setData(data);
    } else {
      this.make();
    }
  }

  /** Draws the chart anew, with the colours of the scheme shown now. */
  redraw() {
    this.drop();
    this.make();
  }

  /** Removes the plot; set() makes it again. */
  drop() {
    if (this.plot) {
      this.plot.destroy();
      this.plot = null;
      this.el.uplot = null;
    }
    drawn.delete(this);
  }

  make() {
    const width = this.width();
    if (!this.data || width === 0) {
      return; // fit() makes it once the element is laid out
    }
    this.plot = new uPlot(this.options(width), this.data, this.el);
    this.el.uplot = this.plot; // for the browser test
    drawn.add(this);
  }

  width() {
    return this.spec.spark ? this.spec.width : Math.floor(this.el.clientWidth);
  }

  /** Follows the element's width. */
  fit() {
    const width = this.width();
    if (!this.plot) {
      this.make();
    } else if (width > 0 && width !== this.plot.width) {
      this.plot.setSize({ width, height: this.spec.height });
    }
  }

  options(width) {
    const { spec } = this;
    const series = [{ value: (u, v) => (v === null ? "—" : new Date(v * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })) }];
    for (const s of spec.series) {
      const stroke = cssVar(s.colour);
      series.push({
        label: s.label,
        stroke,
        width: spec.spark ? 1.5 : 2,
        dash: s.dash,
        fill: spec.spark ? translucent(stroke) : undefined,
        points: { show: !spec.spark && spec.unit === "ms" }, // a latency alone between two gaps is a point
        value: (u, v) => (v === null ? "—" : spec.unit === "ms" ? msText(v) : v.toLocaleString()),
      });
    }
    const opts = {
      width,
      height: spec.height,
      series,
      scales: { y: { range: fromZero } },
      legend: { show: !spec.spark },
      cursor: spec.spark ? { show: false } : { drag: { x: false, y: false, setScale: false } },
      select: { show: false },
      padding: spec.spark ? [2, 1, 2, 1] : [8, 24, 0, 0], // room on the right for the last time's label
    };
    opts.axes = spec.spark ? [{ show: false }, { show: false }] : this.axes();
    return opts;
  }

  /** The axes: local times below, counts or times at the left, in the stylesheet's muted colours. */
  axes() {
    const stroke = cssVar("--muted");
    const line = { stroke: cssVar("--line"), width: 1 };
    const font = "12px system-ui, sans-serif";
    const y = { stroke, grid: line, ticks: line, font, incrs: steps, size: fitLabels };
    y.values = this.spec.unit === "ms" ? (u, ticks) => ticks.map(msText) : (u, ticks) => ticks.map((v) => v.toLocaleString());
    return [{ stroke, grid: line, ticks: line, font }, y];
  }
}
