// Live line charts drawn by uPlot (a small, well-kept canvas chart library).
import uPlot from 'uplot';

import { el } from './format';

export interface ISeriesSpec {
  key: string; // a key of the metrics' history
  label: string;
  stroke: string;
}

const HEIGHT = 110;

export class LiveChart {
  readonly node: HTMLDivElement;
  private plot: uPlot | null = null;
  private readonly body: HTMLDivElement;
  private readonly last: HTMLSpanElement;
  private specs: ISeriesSpec[];

  constructor(
    readonly title: string,
    specs: ISeriesSpec[],
    private readonly format: (v: number | null) => string,
    private readonly range: [number, number] | null = null
  ) {
    this.specs = specs;
    this.node = el('div', 'jp-nbbench-chart');
    const head = el('div', 'jp-nbbench-chart-title', title);
    this.last = el('span', 'jp-nbbench-chart-last');
    head.appendChild(this.last);
    this.body = el('div', 'jp-nbbench-chart-body');
    this.node.append(head, this.body);
  }

  /** The series shown (a GPU appearing adds one): the plot is rebuilt when they change. */
  setSeries(specs: ISeriesSpec[]): void {
    if (specs.map(s => s.key).join() !== this.specs.map(s => s.key).join()) {
      this.specs = specs;
      this.plot?.destroy();
      this.plot = null;
    }
  }

  private make(width: number): uPlot {
    const fmt = this.format;
    const opts: uPlot.Options = {
      width,
      height: HEIGHT,
      legend: { show: true, live: false },
      cursor: { show: false },
      scales: {
        x: { time: false },
        y: this.range
          ? { range: this.range }
          : { range: (_u, _min, max) => [0, Math.max(max || 0, 1) * 1.1] }
      },
      axes: [
        { size: 30, values: (_u, vals) => vals.map(v => `${v.toFixed(0)} s`) },
        { size: 76, values: (_u, vals) => vals.map(v => fmt(v)) }
      ],
      series: [
        {},
        ...this.specs.map(s => ({
          label: s.label,
          stroke: s.stroke,
          width: 1.5,
          spanGaps: false,
          points: { show: false }
        }))
      ]
    };
    return new uPlot(opts, [[], ...this.specs.map(() => [])] as uPlot.AlignedData, this.body);
  }

  update(history: { [key: string]: (number | null)[] }): void {
    const t = history['t'] || [];
    const ys = this.specs.map(s => history[s.key] || t.map(() => null));
    const width = Math.max(200, this.node.clientWidth || 280);
    if (!this.plot) {
      this.plot = this.make(width);
    } else if (Math.abs(this.plot.width - width) > 4) {
      this.plot.setSize({ width, height: HEIGHT });
    }
    this.plot.setData([t, ...ys] as uPlot.AlignedData);
    // the latest figure of each series, in its line's colour (the chart's legend)
    const parts: HTMLElement[] = this.specs.map((s, i) => {
      const v = ys[i].length ? ys[i][ys[i].length - 1] : null;
      const span = el('span', 'jp-nbbench-series', `\u25cf ${s.label} ${this.format(v)}`);
      span.style.color = s.stroke;
      return span;
    });
    this.last.replaceChildren(document.createTextNode(' \u2014 '), ...parts);
  }

  dispose(): void {
    this.plot?.destroy();
    this.plot = null;
  }
}
