// Requests to the server extension under <base_url>nbbench/, with Jupyter's token or cookie
// and (for POST/DELETE) its XSRF token: ServerConnection.makeRequest adds both.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export interface IGpu {
  index: number;
  name: string | null;
  util_pct: number | null;
  mem_used_bytes: number | null;
  mem_total_bytes: number | null;
  power_w: number | null;
}

export interface IDisk {
  device: string;
  read_bytes_per_s: number | null;
  write_bytes_per_s: number | null;
  dataset: boolean;
}

export interface IMetrics {
  time: number;
  interval_s: number;
  samples: number;
  sampler: { running: boolean; idle_stop_s: number; cpu_pct_of_one_core: number | null };
  cpu: {
    util_pct: number | null;
    iowait_pct: number | null;
    logical: number | null;
    usable: number | null;
    quota: number | null;
    throttled_pct: number | null;
    throttling_na: string | null;
  };
  memory: {
    used_bytes: number | null;
    available_bytes: number | null;
    cached_bytes: number | null;
  };
  disk: {
    device: string | null;
    path: string | null;
    read_bytes_per_s: number | null;
    write_bytes_per_s: number | null;
  };
  disks: IDisk[];
  net: { rx_bytes_per_s: number | null; tx_bytes_per_s: number | null };
  gpus: IGpu[];
  gpu_note: string | null;
  pressure: { [key: string]: number | null } | null;
  pressure_na: string | null;
  verdict: { machine: string; line: string };
  history: { [key: string]: (number | null)[] };
  notes: string[];
}

export interface IKernel {
  id: string;
  pid: number;
  path: string;
  kernel_name: string | null;
  execution_state: string | null;
  cpu_pct?: number | null;
  read_bytes_per_s?: number | null;
  write_bytes_per_s?: number | null;
  rss_bytes?: number | null;
  children?: number;
  children_cpu_pct?: number | null;
  busy?: boolean;
  verdict?: string;
}

export interface IHistoryRun {
  run_id: number;
  kind: string;
  label: string | null;
  status: string;
  verdict: string | null;
  started: number | null;
  duration_s: number | null;
  summary: string | null;
  metrics: { [key: string]: number };
}

export interface IRun {
  id: number;
  probe: string;
  argv: string[];
  state: 'running' | 'done' | 'failed' | 'stopped';
  progress: string;
  output: string[];
  elapsed_s: number;
  returncode: number | null;
  result_ids: number[];
  error: string | null;
}

/** The server's answer to a request it refused: its one error line. */
export class NbbenchError extends Error {}

export function nbbenchUrl(...parts: string[]): string {
  const settings = ServerConnection.makeSettings();
  return URLExt.join(settings.baseUrl, 'nbbench', ...parts);
}

export async function requestAPI<T>(path: string, init: RequestInit = {}): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'nbbench', 'api', path);
  const response = await ServerConnection.makeRequest(url, init, settings);
  const text = await response.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message =
      (data && (data.error || data.message)) || `${response.status} ${response.statusText}`;
    throw new NbbenchError(String(message));
  }
  return data as T;
}
