// nbbench in JupyterLab: a sidebar, a status-bar item, palette commands and settings,
// reading the server extension under <base_url>nbbench/.
import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, IFrame, MainAreaWidget } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';

import { nbbenchUrl, requestAPI, IHistoryRun } from './api';
import { DEFAULT_OPTIONS, IPanelOptions, NbbenchSidebar } from './sidebar';
import { KernelStatus } from './status';

const PLUGIN_ID = 'nbbench:plugin';

namespace CommandIDs {
  export const open = 'nbbench:open-sidebar';
  export const run = 'nbbench:run-probe';
  export const lastReport = 'nbbench:open-last-report';
}

function openReport(app: JupyterFrontEnd, ids: number[], title: string): void {
  const frame = new IFrame({ sandbox: ['allow-same-origin'] });
  frame.url = nbbenchUrl('report', ids.join(','));
  const widget = new MainAreaWidget({ content: frame });
  widget.id = `nbbench-report-${ids.join('-')}-${Date.now()}`;
  widget.title.label = title;
  widget.title.closable = true;
  widget.addClass('jp-nbbench-report');
  app.shell.add(widget, 'main');
  app.shell.activateById(widget.id);
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'nbbench: the machine, the kernels, results and probes in a sidebar and the status bar',
  autoStart: true,
  requires: [],
  optional: [
    ICommandPalette,
    ISettingRegistry,
    IStatusBar,
    INotebookTracker,
    ILayoutRestorer,
    ILabShell
  ],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    settings: ISettingRegistry | null,
    statusBar: IStatusBar | null,
    tracker: INotebookTracker | null,
    restorer: ILayoutRestorer | null
  ) => {
    const sidebar = new NbbenchSidebar((ids, title) => openReport(app, ids, title));
    app.shell.add(sidebar, 'right', { rank: 900 });
    if (restorer) {
      restorer.add(sidebar, 'nbbench-sidebar');
    }
    const open = () => app.shell.activateById(sidebar.id);

    app.commands.addCommand(CommandIDs.open, {
      label: 'nbbench: Open the Sidebar',
      caption: 'the machine, the kernels, recent results and a probe form',
      execute: open
    });
    app.commands.addCommand(CommandIDs.run, {
      label: args => (args.probe ? `nbbench: Run ${args.probe}` : 'nbbench: Run a Probe…'),
      caption: 'gpu, dd, randread, doctor or s3 from the sidebar\u2019s form',
      execute: args => {
        open();
        sidebar.prepareRun(
          args.probe as string | undefined,
          args.target as string | undefined,
          Boolean(args.run)
        );
      }
    });
    app.commands.addCommand(CommandIDs.lastReport, {
      label: 'nbbench: Open the Last Report',
      caption: 'the newest stored result\u2019s report in a tab',
      execute: async () => {
        const data = await requestAPI<{ runs: IHistoryRun[] }>('history?limit=1');
        if (data.runs.length) {
          const r = data.runs[0];
          openReport(app, [r.run_id], `nbbench #${r.run_id} ${r.kind}`);
        } else {
          open();
        }
      }
    });
    if (palette) {
      for (const command of [CommandIDs.open, CommandIDs.run, CommandIDs.lastReport]) {
        palette.addItem({ command, category: 'nbbench' });
      }
    }

    let status: KernelStatus | null = null;
    if (statusBar && tracker) {
      status = new KernelStatus(tracker, open);
      statusBar.registerStatusItem('nbbench:kernel-status', {
        item: status,
        align: 'left',
        rank: 5,
        isActive: () => !!tracker.currentWidget
      });
    }

    if (settings) {
      const apply = (s: ISettingRegistry.ISettings) => {
        const c = s.composite as Partial<IPanelOptions> & { statusBar?: boolean };
        const options: IPanelOptions = { ...DEFAULT_OPTIONS, ...c };
        sidebar.setOptions(options);
        if (status) {
          status.setInterval(options.intervalMs);
          status.setHidden(c.statusBar === false);
        }
      };
      settings
        .load(PLUGIN_ID)
        .then(s => {
          apply(s);
          s.changed.connect(apply);
        })
        .catch(reason => console.error('nbbench: the settings could not be loaded', reason));
    }
  }
};

export default plugin;
