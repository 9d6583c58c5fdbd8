// The status-bar item: the active notebook's kernel in a few words (CPU, read rate, GPU
// utilisation, the verdict when there is one); a click opens the sidebar.
import { INotebookTracker } from '@jupyterlab/notebook';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IKernel, IMetrics, requestAPI } from './api';
import { pct, si } from './format';

export class KernelStatus extends Widget {
  private timer: number | null = null;
  private busy = false;

  constructor(
    private readonly tracker: INotebookTracker,
    private readonly onOpen: () => void,
    private intervalMs = 2000
  ) {
    super();
    this.addClass('jp-nbbench-status');
    this.node.title = 'nbbench: this notebook\u2019s kernel (click: the nbbench sidebar)';
    this.node.textContent = 'nbbench';
    this.node.onclick = () => this.onOpen();
    tracker.currentChanged.connect(() => void this.refresh());
  }

  setInterval(ms: number): void {
    this.intervalMs = ms;
    if (this.timer !== null) {
      window.clearInterval(this.timer);
      this.timer = null;
      this.start();
    }
  }

  protected onAfterAttach(_msg: Message): void {
    this.start();
  }

  protected onBeforeDetach(_msg: Message): void {
    if (this.timer !== null) {
      window.clearInterval(this.timer);
      this.timer = null;
    }
  }

  private start(): void {
    void this.refresh();
    this.timer = window.setInterval(() => void this.refresh(), Math.max(500, this.intervalMs));
  }

  async refresh(): Promise<void> {
    const kernelId = this.tracker.currentWidget?.sessionContext.session?.kernel?.id;
    if (!kernelId) {
      this.node.textContent = 'nbbench';
      this.node.dataset.state = 'none';
      return;
    }
    if (this.busy) {
      return;
    }
    this.busy = true;
    try {
      const [k, m] = await Promise.all([
        requestAPI<{ kernels: IKernel[] }>('kernels'),
        requestAPI<IMetrics>('metrics')
      ]);
      const mine = k.kernels.find(x => x.id === kernelId);
      if (!mine || mine.cpu_pct === undefined) {
        this.node.textContent = 'nbbench: kernel …';
        return;
      }
      const gpu = m.gpus.length ? `GPU ${m.gpus.map(g => pct(g.util_pct)).join('/')}` : 'no GPU';
      const parts = [
        `kernel CPU ${pct(mine.cpu_pct ?? null)}`,
        `read ${si(mine.read_bytes_per_s ?? null, 'B/s')}`,
        gpu
      ];
      if (mine.busy && mine.verdict) {
        parts.push(mine.verdict);
      }
      this.node.textContent = parts.join(' · ');
      this.node.dataset.state = mine.busy ? 'busy' : 'idle';
    } catch (err) {
      this.node.textContent = 'nbbench: N/A';
      this.node.title = `nbbench server extension: ${(err as Error).message}`;
    } finally {
      this.busy = false;
    }
  }
}
