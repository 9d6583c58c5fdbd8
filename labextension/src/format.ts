// Figures with their units, as nbbench words them (SI for rates, binary for memory).
export function si(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined || !isFinite(value)) {
    return 'N/A';
  }
  const prefixes = ['', 'k', 'M', 'G', 'T', 'P'];
  let v = Math.abs(value);
  let i = 0;
  while (v >= 1000 && i < prefixes.length - 1) {
    v /= 1000;
    i += 1;
  }
  const digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return `${value < 0 ? '-' : ''}${v.toFixed(i === 0 ? 0 : digits)} ${prefixes[i]}${unit}`;
}

export function bytes(value: number | null | undefined): string {
  if (value === null || value === undefined || !isFinite(value)) {
    return 'N/A';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = value;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

export function pct(value: number | null | undefined): string {
  return value === null || value === undefined || !isFinite(value)
    ? 'N/A'
    : `${value.toFixed(0)} %`;
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text) {
    node.textContent = text;
  }
  return node;
}
