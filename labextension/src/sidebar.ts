// The sidebar panel titled "nbbench": the verdict line, live charts, the local kernels,
// recent results (click: its report in a Lab tab; pick two: their comparison) and a short
// form that runs a probe with progress and Stop.
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IHistoryRun, IKernel, IMetrics, IRun, requestAPI } from './api';
import { LiveChart, ISeriesSpec } from './charts';
import { bytes, el, pct, si } from './format';

export interface IPanelOptions {
  intervalMs: number;
  showCharts: boolean;
  showKernels: boolean;
  showHistory: boolean;
  showRun: boolean;
}

export const DEFAULT_OPTIONS: IPanelOptions = {
  intervalMs: 2000,
  showCharts: true,
  showKernels: true,
  showHistory: true,
  showRun: true
};

const GPU_COLOURS = ['#76b900', '#2e7d32', '#9ccc65', '#558b2f'];
const PROBE_HINT: { [probe: string]: string } = {
  gpu: '(no target)',
  dd: 'a directory, e.g. /data',
  randread: 'a directory, e.g. /data',
  doctor: 'a directory, e.g. /data',
  s3: 's3://bucket/prefix'
};

export class NbbenchSidebar extends Widget {
  private options: IPanelOptions = { ...DEFAULT_OPTIONS };
  private timer: number | null = null;
  private busy = false;
  private readonly verdict = el('div', 'jp-nbbench-verdict', 'waiting for the first samples…');
  private readonly facts = el('div', 'jp-nbbench-facts');
  private readonly charts: LiveChart[];
  private readonly gpuChart: LiveChart;
  private readonly chartBox = el('div', 'jp-nbbench-section jp-nbbench-charts');
  private readonly kernelBox = el('div', 'jp-nbbench-section');
  private readonly kernelTable = el('table', 'jp-nbbench-kernels');
  private readonly historyBox = el('div', 'jp-nbbench-section');
  private readonly historyList = el('ul', 'jp-nbbench-history');
  private readonly compareButton = el(
    'button',
    'jp-mod-styled jp-nbbench-compare',
    'Compare the two picked'
  );
  private readonly runBox = el('div', 'jp-nbbench-section jp-nbbench-run');
  private readonly probeSelect = el('select', 'jp-mod-styled jp-nbbench-probe');
  private readonly targetInput = el('input', 'jp-mod-styled jp-nbbench-target');
  private readonly sizeInput = el('input', 'jp-mod-styled jp-nbbench-size');
  private readonly runButton = el(
    'button',
    'jp-mod-styled jp-mod-accept jp-nbbench-run-button',
    'Run'
  );
  private readonly stopButton = el(
    'button',
    'jp-mod-styled jp-mod-warn jp-nbbench-stop-button',
    'Stop'
  );
  private readonly progress = el('div', 'jp-nbbench-progress');
  private readonly error = el('div', 'jp-nbbench-error');
  private readonly picked = new Set<number>();
  private currentRun: IRun | null = null;
  private lastRuns: IHistoryRun[] = [];

  constructor(private readonly openReport: (ids: number[], title: string) => void) {
    super();
    this.id = 'nbbench-sidebar';
    this.addClass('jp-nbbench-sidebar');
    this.title.caption = 'nbbench: the machine, the kernels, results and probes';
    this.title.label = 'nbbench';
    const mb = (v: number | null) => si(v, 'B/s');
    this.charts = [
      new LiveChart(
        'CPU (machine)',
        [{ key: 'cpu_pct', label: 'busy', stroke: '#1976d2' }],
        pct,
        [0, 100]
      ),
      new LiveChart(
        'Memory used',
        [{ key: 'mem_used_bytes', label: 'used', stroke: '#8e24aa' }],
        bytes
      ),
      new LiveChart(
        'Disk (the server root\u2019s device)',
        [
          { key: 'disk_read_bytes_per_s', label: 'read', stroke: '#ef6c00' },
          { key: 'disk_write_bytes_per_s', label: 'write', stroke: '#6d4c41' }
        ],
        mb
      ),
      new LiveChart(
        'Network',
        [
          { key: 'net_rx_bytes_per_s', label: 'rx', stroke: '#00897b' },
          { key: 'net_tx_bytes_per_s', label: 'tx', stroke: '#546e7a' }
        ],
        mb
      )
    ];
    this.gpuChart = new LiveChart('GPU kernel-active', [], pct, [0, 100]);
    this.build();
  }

  private build(): void {
    const root = this.node;
    root.append(this.verdict, this.facts);
    this.chartBox.append(...this.charts.map(c => c.node), this.gpuChart.node);
    root.appendChild(this.chartBox);

    this.kernelBox.append(el('h3', '', 'Kernels'), this.kernelTable);
    root.appendChild(this.kernelBox);

    this.compareButton.disabled = true;
    this.compareButton.onclick = () => {
      const ids = [...this.picked];
      if (ids.length === 2) {
        this.openReport(ids, `nbbench: ${ids[0]} vs ${ids[1]}`);
      }
    };
    const head = el('h3', '', 'Recent results');
    this.historyBox.append(head, this.historyList, this.compareButton);
    root.appendChild(this.historyBox);

    for (const probe of Object.keys(PROBE_HINT)) {
      const option = el('option', '', probe);
      option.value = probe;
      this.probeSelect.appendChild(option);
    }
    this.probeSelect.value = 'dd';
    this.targetInput.placeholder = PROBE_HINT['dd'];
    this.targetInput.title = 'the directory (a temporary file is written and removed) or s3:// URL';
    this.sizeInput.placeholder = 'size (64M)';
    this.sizeInput.title = 'bytes to write and read (dd, randread)';
    this.probeSelect.onchange = () => {
      const p = this.probeSelect.value;
      this.targetInput.placeholder = PROBE_HINT[p];
      this.targetInput.disabled = p === 'gpu';
      this.sizeInput.disabled = !(p === 'dd' || p === 'randread');
    };
    this.runButton.onclick = () => void this.startRun();
    this.stopButton.onclick = () => void this.stopRun();
    this.stopButton.disabled = true;
    const form = el('div', 'jp-nbbench-form');
    form.append(
      this.probeSelect,
      this.targetInput,
      this.sizeInput,
      this.runButton,
      this.stopButton
    );
    this.runBox.append(el('h3', '', 'Run a probe'), form, this.progress, this.error);
    root.appendChild(this.runBox);
    this.applyOptions();
  }

  setOptions(options: Partial<IPanelOptions>): void {
    this.options = { ...this.options, ...options };
    this.applyOptions();
    if (this.timer !== null) {
      this.stopPolling();
      this.startPolling();
    }
  }

  private applyOptions(): void {
    this.chartBox.hidden = !this.options.showCharts;
    this.kernelBox.hidden = !this.options.showKernels;
    this.historyBox.hidden = !this.options.showHistory;
    this.runBox.hidden = !this.options.showRun;
  }

  /** Choose a probe and target in the form (the palette's "run a probe"), and run it when asked. */
  prepareRun(probe?: string, target?: string, run = false): void {
    if (probe && PROBE_HINT[probe] !== undefined) {
      this.probeSelect.value = probe;
      this.probeSelect.onchange?.(new Event('change'));
    }
    if (target !== undefined) {
      this.targetInput.value = target;
    }
    this.targetInput.focus();
    if (run) {
      void this.startRun();
    }
  }

  get lastResultIds(): number[] {
    return this.lastRuns.map(r => r.run_id);
  }

  // ------------------------------------------------------------------ polling
  protected onAfterShow(_msg: Message): void {
    this.startPolling();
  }

  protected onBeforeHide(_msg: Message): void {
    this.stopPolling();
  }

  protected onAfterAttach(_msg: Message): void {
    if (this.isVisible) {
      this.startPolling();
    }
  }

  protected onBeforeDetach(_msg: Message): void {
    this.stopPolling();
  }

  private startPolling(): void {
    if (this.timer !== null) {
      return;
    }
    void this.refresh(true);
    this.timer = window.setInterval(
      () => void this.refresh(false),
      Math.max(500, this.options.intervalMs)
    );
  }

  private stopPolling(): void {
    if (this.timer !== null) {
      window.clearInterval(this.timer);
      this.timer = null;
    }
  }

  async refresh(withHistory: boolean): Promise<void> {
    if (this.busy) {
      return;
    }
    this.busy = true;
    try {
      const metrics = await requestAPI<IMetrics>('metrics');
      this.showMetrics(metrics);
      if (this.options.showKernels) {
        const k = await requestAPI<{ kernels: IKernel[] }>('kernels');
        this.showKernels(k.kernels);
      }
      if (this.currentRun && this.currentRun.state === 'running') {
        await this.followRun();
        withHistory = withHistory || this.currentRun.state !== 'running';
      }
      if (withHistory || this.historyList.childElementCount === 0) {
        await this.refreshHistory();
      }
    } catch (err) {
      this.verdict.textContent = `nbbench server extension: ${(err as Error).message}`;
      this.verdict.classList.add('jp-nbbench-bad');
    } finally {
      this.busy = false;
    }
  }

  private showMetrics(m: IMetrics): void {
    this.verdict.classList.remove('jp-nbbench-bad');
    this.verdict.textContent = m.verdict.line || m.verdict.machine || 'no verdict yet';
    const cpu = m.cpu;
    const quota = cpu.quota ? `quota ${cpu.quota.toFixed(1)} cores` : 'no CPU quota';
    const throttled =
      cpu.throttled_pct === null
        ? cpu.throttling_na
          ? 'throttling N/A'
          : ''
        : `throttled ${pct(cpu.throttled_pct)}`;
    const psi = m.pressure
      ? `pressure: CPU ${pct(m.pressure['cpu_some_pct'])} · IO ${pct(m.pressure['io_some_pct'])} · memory ${pct(m.pressure['memory_some_pct'])}`
      : `pressure N/A (${m.pressure_na})`;
    const disks = m.disks
      .map(
        d =>
          `${d.device}${d.dataset ? ' (root dir)' : ''} R ${si(d.read_bytes_per_s, 'B/s')} W ${si(d.write_bytes_per_s, 'B/s')}`
      )
      .join('; ');
    const gpus = m.gpus.length
      ? m.gpus
          .map(
            g =>
              `GPU ${g.index} ${pct(g.util_pct)} ${bytes(g.mem_used_bytes)}${g.power_w !== null ? ` ${g.power_w.toFixed(0)} W` : ''}`
          )
          .join('; ')
      : m.gpu_note || 'no GPU';
    const lines = [
      `CPU ${pct(cpu.util_pct)} of ${cpu.logical} (usable ${cpu.usable}, ${quota}${throttled ? ', ' + throttled : ''}) · iowait ${pct(cpu.iowait_pct)}`,
      `memory ${bytes(m.memory.used_bytes)} used · page cache ${bytes(m.memory.cached_bytes)} · available ${bytes(m.memory.available_bytes)}`,
      psi,
      disks ||
        `disk R ${si(m.disk.read_bytes_per_s, 'B/s')} W ${si(m.disk.write_bytes_per_s, 'B/s')}`,
      gpus
    ];
    this.facts.replaceChildren(...lines.map(t => el('div', '', t)));
    if (this.options.showCharts) {
      for (const c of this.charts) {
        c.update(m.history);
      }
      const specs: ISeriesSpec[] = m.gpus.map((g, i) => ({
        key: `gpu${g.index}_util_pct`,
        label: `GPU ${g.index}`,
        stroke: GPU_COLOURS[i % GPU_COLOURS.length]
      }));
      this.gpuChart.node.hidden = specs.length === 0;
      if (specs.length) {
        this.gpuChart.setSeries(specs);
        this.gpuChart.update(m.history);
      }
    }
  }

  private showKernels(kernels: IKernel[]): void {
    const rows: HTMLElement[] = [];
    const head = el('tr');
    for (const h of ['kernel', 'CPU', 'read', 'RSS', 'verdict']) {
      head.appendChild(el('th', '', h));
    }
    rows.push(head);
    for (const k of kernels) {
      const tr = el('tr', k.busy ? 'jp-nbbench-busy' : '');
      const name = k.path || `${k.kernel_name} ${k.id.slice(0, 8)}`;
      const kids = k.children ? ` +${k.children}` : '';
      const cells = [
        `${name} (pid ${k.pid}${kids})`,
        k.cpu_pct === undefined ? '…' : pct(k.cpu_pct ?? null),
        k.read_bytes_per_s === undefined ? '…' : si(k.read_bytes_per_s ?? null, 'B/s'),
        k.rss_bytes === undefined ? '…' : bytes(k.rss_bytes ?? null),
        k.verdict || ''
      ];
      for (const c of cells) {
        tr.appendChild(el('td', '', c));
      }
      rows.push(tr);
    }
    if (!kernels.length) {
      const tr = el('tr');
      const td = el('td', '', 'no kernel running on this server');
      td.colSpan = 5;
      tr.appendChild(td);
      rows.push(tr);
    }
    this.kernelTable.replaceChildren(...rows);
  }

  async refreshHistory(): Promise<void> {
    const data = await requestAPI<{ runs: IHistoryRun[]; error?: string }>('history?limit=15');
    this.lastRuns = data.runs;
    const items: HTMLElement[] = [];
    for (const r of data.runs) {
      const li = el('li', `jp-nbbench-result jp-nbbench-${r.verdict || r.status}`);
      li.dataset.runId = String(r.run_id);
      const box = el('input');
      box.type = 'checkbox';
      box.checked = this.picked.has(r.run_id);
      box.title = 'pick two to compare';
      box.onchange = () => {
        if (box.checked) {
          this.picked.add(r.run_id);
        } else {
          this.picked.delete(r.run_id);
        }
        this.compareButton.disabled = this.picked.size !== 2;
      };
      const link = el(
        'a',
        'jp-nbbench-result-link',
        `#${r.run_id} ${r.kind}${r.label ? ' [' + r.label + ']' : ''}`
      );
      link.href = '#';
      link.title = 'open its report in a tab';
      link.onclick = ev => {
        ev.preventDefault();
        this.openReport([r.run_id], `nbbench #${r.run_id} ${r.kind}`);
      };
      const text = el('div', 'jp-nbbench-summary', r.summary || r.status);
      li.append(box, link, text);
      items.push(li);
    }
    if (!items.length) {
      items.push(
        el('li', 'jp-nbbench-empty', data.error ? `store: ${data.error}` : 'no stored results yet')
      );
    }
    this.historyList.replaceChildren(...items);
    this.compareButton.disabled = this.picked.size !== 2;
  }

  // --------------------------------------------------------------------- runs
  private async startRun(): Promise<void> {
    this.error.textContent = '';
    const body = {
      probe: this.probeSelect.value,
      target: this.targetInput.value,
      size: this.sizeInput.value || undefined
    };
    try {
      this.currentRun = await requestAPI<IRun>('runs', {
        method: 'POST',
        body: JSON.stringify(body)
      });
      this.showRun(this.currentRun);
      if (this.timer === null) {
        this.startPolling();
      }
    } catch (err) {
      this.error.textContent = (err as Error).message;
    }
  }

  private async stopRun(): Promise<void> {
    if (!this.currentRun) {
      return;
    }
    try {
      this.currentRun = await requestAPI<IRun>(`runs/${this.currentRun.id}`, { method: 'DELETE' });
      this.showRun(this.currentRun);
    } catch (err) {
      this.error.textContent = (err as Error).message;
    }
  }

  private async followRun(): Promise<void> {
    if (!this.currentRun) {
      return;
    }
    this.currentRun = await requestAPI<IRun>(`runs/${this.currentRun.id}`);
    this.showRun(this.currentRun);
  }

  private showRun(run: IRun): void {
    const running = run.state === 'running';
    this.runButton.disabled = running;
    this.stopButton.disabled = !running;
    const what = run.argv.join(' ');
    if (running) {
      this.progress.textContent = `${what} — ${run.elapsed_s.toFixed(0)} s: ${run.progress}`;
    } else {
      const saved = run.result_ids.length ? `, saved as #${run.result_ids.join(', #')}` : '';
      this.progress.textContent = `${what} — ${run.state} after ${run.elapsed_s.toFixed(0)} s${saved}`;
    }
    this.progress.dataset.state = run.state;
    this.error.textContent = run.state === 'failed' && run.error ? run.error : '';
  }

  protected onResize(_msg: Widget.ResizeMessage): void {
    void this.refresh(false);
  }

  dispose(): void {
    this.stopPolling();
    for (const c of this.charts) {
      c.dispose();
    }
    this.gpuChart.dispose();
    super.dispose();
  }
}
